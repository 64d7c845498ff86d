# `make demo` and `make test` each set everything up from a fresh clone (Python >= 3.10 and pip).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q

.PHONY: demo demo-digits test setup setup-dev bench-peers clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# torch first, exactly the CPU build on this disk, unless the venv already has a torch; later
# installs are constrained to that torch, so no resolver backtracking can swap in another build.
$(VENV)/torch-constraint.txt: | $(PY)
	$(PY) -c "import torch" 2>/dev/null || $(PIP) install torch==2.13.0
	$(PY) -c "import torch; print('torch==' + torch.__version__)" > $@

$(VENV)/.setup: pyproject.toml $(VENV)/torch-constraint.txt
	$(PIP) install -e . -c $(VENV)/torch-constraint.txt
	touch $@

$(VENV)/.setup-dev: pyproject.toml $(VENV)/torch-constraint.txt
	$(PIP) install -e ".[dev]" -c $(VENV)/torch-constraint.txt
	touch $@

setup: $(VENV)/.setup
setup-dev: $(VENV)/.setup-dev

demo: setup
	$(PY) examples/fraud/generate.py --out examples/fraud/data
	$(VENV)/bin/trainforge run examples/fraud/pipeline.yaml

# The digits example: a CNN on scikit-learn's bundled 8x8 images (bf16-mixed, cosine, early stop).
demo-digits: setup
	$(PY) -c "import sklearn" 2>/dev/null || $(PIP) install "scikit-learn>=1.3" -c $(VENV)/torch-constraint.txt
	$(PY) examples/digits/prepare.py
	$(VENV)/bin/trainforge run examples/digits/pipeline.yaml

test: setup-dev
	$(PY) -m ruff check src tests benchmarks examples
	$(PY) -m pytest

# Peer tools (Lightning, MLflow) for the benchmarks' comparisons, in a venv of their own so they
# never leak into the test environment. Benchmarks: .venv-peers/bin/python benchmarks/<name>.py
bench-peers: $(VENV)/torch-constraint.txt
	test -x .venv-peers/bin/python || $(PYTHON) -m venv .venv-peers
	.venv-peers/bin/python -m pip --disable-pip-version-check -q install -e ".[dev]" lightning mlflow -c $(VENV)/torch-constraint.txt

clean:
	rm -rf .trainforge examples/fraud/data examples/digits/data
