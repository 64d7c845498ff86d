# `make demo` and `make test` each set everything up from a fresh clone (Python >= 3.10 and pip).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
# Every dependency but torch, pinned (`make lock` writes it): installs resolve without
# backtracking and give the same versions on every machine.
LOCK := constraints.txt

.PHONY: demo demo-digits test setup setup-dev lock lock-upgrade bench-peers clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# torch first, exactly the CPU build on this disk, unless the venv already has a torch; later
# installs are constrained to that torch, so no resolver can swap in another build.
$(VENV)/torch-constraint.txt: | $(PY)
	@$(PY) -c "import torch" 2>/dev/null || { start=$$(date +%s); \
	  $(PIP) install torch==2.13.0 -c $(LOCK) && echo "torch took $$(($$(date +%s) - start)) s"; }
	$(PY) -W ignore -c "import torch; print('torch==' + torch.__version__)" > $@

# The rest comes from uv, pinned by the lock: it fetches and unpacks in parallel (seconds where
# pip takes a minute or two) and keeps the venv's torch, the only one the constraint admits.
# Bytecode is compiled at install, trainforge's own included: where Python writes none itself
# (PYTHONDONTWRITEBYTECODE, a read-only venv) every process would compile some 1,500 modules
# before its first line: 3 to 4 s of each `trainforge run` on 2 cores.
UV_INSTALL := $(VENV)/bin/uv pip install --python $(PY) -q -c $(LOCK) -b $(LOCK) \
	-c $(VENV)/torch-constraint.txt --compile-bytecode
SETUP = start=$$(date +%s); $(PIP) install uv -c $(LOCK) && $(UV_INSTALL) $(1) \
	&& $(PY) -m compileall -q src && echo "setup took $$(($$(date +%s) - start)) s"

# The `all` extra: what the README's commands use (serve, tune, export, PostgreSQL, S3).
$(VENV)/.setup: pyproject.toml $(LOCK) $(VENV)/torch-constraint.txt
	@$(call SETUP,-e ".[all]")
	touch $@

$(VENV)/.setup-dev: pyproject.toml $(LOCK) $(VENV)/torch-constraint.txt
	@$(call SETUP,-e ".[dev]")
	touch $@

setup: $(VENV)/.setup
setup-dev: $(VENV)/.setup-dev

# The lock is resolved by uv for Python >= 3.10 on every platform (markers where they differ),
# from pyproject's dependencies with the dev extra and the requirements of the venv's torch,
# without torch itself: people keep their own torch build. `lock` keeps every pin it can (after
# a change to pyproject.toml), `lock-upgrade` takes the newest releases.
lock lock-upgrade: $(VENV)/.setup-dev
	$(PY) -c "from importlib.metadata import requires; \
	  print('\n'.join(r for r in requires('torch') if 'extra ==' not in r))" > $(VENV)/torch-requires.txt
	echo 'torch; python_version < "0"' > $(VENV)/without-torch.txt
	$(VENV)/bin/uv pip compile pyproject.toml $(VENV)/torch-requires.txt --extra dev --universal \
	  --python-version 3.10 --override $(VENV)/without-torch.txt --custom-compile-command "make lock" \
	  --quiet -o $(LOCK) $(if $(filter lock-upgrade,$@),--upgrade)

demo: setup
	$(PY) examples/fraud/generate.py --out examples/fraud/data
	$(VENV)/bin/trainforge run examples/fraud/pipeline.yaml

# The digits example: a CNN on scikit-learn's bundled 8x8 images (bf16-mixed, cosine, early stop).
demo-digits: setup
	$(PY) -c "import sklearn" 2>/dev/null || $(UV_INSTALL) "scikit-learn>=1.3"
	$(PY) examples/digits/prepare.py
	$(VENV)/bin/trainforge run examples/digits/pipeline.yaml

# pytest-xdist: a worker per core and two more (TEST_WORKERS=1 for a serial run): many tests
# wait on processes, heartbeats or backoff, and the extra workers' tests use that time (on 2
# cores, one run each on 2026-12-08: pytest 1,045 s with 4 workers, 1,120 s with 3). The
# tests marked slow come first, and each worker takes the next test when it is almost out of
# work; the tests that share a module's or a folder's expensive fixture (a trained run, a
# torchrun job) are one unit that one worker runs, so that it is made once (the scheduler in
# tests/conftest.py). mypy checks beside them (its report follows pytest's), in the time the
# waiting tests leave.
TEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print((os.cpu_count() or 1) + 2)")
test: setup-dev
	$(PY) -m ruff check src tests benchmarks examples
	$(PY) -m mypy > $(VENV)/mypy.log 2>&1 & mypy=$$!; \
	$(PY) -m pytest -n $(TEST_WORKERS) --dist load; tests=$$?; \
	wait $$mypy; typed=$$?; echo "mypy:"; cat $(VENV)/mypy.log; \
	test $$tests -eq 0 && test $$typed -eq 0

# Peer tools (Lightning, MLflow, Evidently, DVC) for the benchmarks' comparisons, in a venv of their own so they
# never leak into the test environment. Benchmarks: .venv-peers/bin/python benchmarks/<name>.py
# pandas below 3 there: Evidently 0.7 imports a pandas 2 internal.
bench-peers: $(VENV)/torch-constraint.txt
	test -x .venv-peers/bin/python || $(PYTHON) -m venv .venv-peers
	.venv-peers/bin/python -m pip --disable-pip-version-check -q install -e ".[dev]" lightning mlflow evidently dvc "pandas<3" -c $(VENV)/torch-constraint.txt

clean:
	rm -rf .trainforge examples/fraud/data examples/digits/data
