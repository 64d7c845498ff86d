"""The cache invalidates exactly what an edit affects: a suite of seeded edits to a small
project (two helper modules, a data file, an installed dependency, a seven-step pipeline).

Each case starts from the baseline project, which must hit every step (changing nothing
reuses everything), then applies one edit: the steps that run must be exactly the edited
step and those downstream of it (an edit of code, a param, one byte of data, an upstream
output or a dependency version), or none (a comment, whitespace, a docstring, a decorator's
retry setting, an uncalled function).
"""

from __future__ import annotations

import importlib
import linecache
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from trainforge.entities import Pipeline as PipelineRecord
from trainforge.orchestration import InProcessRunner, ValueStore
from trainforge.orchestration.cache import explain
from trainforge.storage import Store, open_store
from trainforge.storage.objects import open_object_store

MODULES = ("edits_pipe", "edits_helpers", "edits_stats", "fakedep")
DOWNSTREAM = {
    "load": {"column_x", "column_y"},
    "column_x": {"shift_x"},
    "column_y": {"weight_y"},
    "shift_x": {"summarize"},
    "weight_y": {"summarize"},
    "summarize": {"report"},
    "report": set(),
}
STEPS = set(DOWNSTREAM)

BASELINE = {
    "edits_helpers.py": '''
        """Helpers the steps call."""

        OFFSET = 1


        def shift(values):
            # move every value by the offset
            return [_inner(v) for v in values]


        def _inner(value):
            return value + OFFSET


        def weight(values):
            return [v * 2 for v in values]


        def unused():
            return 0
    ''',
    "edits_stats.py": '''
        """Statistics."""


        def mean(values):
            """The arithmetic mean."""
            return sum(values) / len(values)


        class Line:
            def __init__(self, stats):
                self.stats = stats

            def render(self):
                return f"x={self.stats['x']:.3f} y={self.stats['y']:.3f}"
    ''',
    "edits_pipe.py": '''
        import csv

        import edits_helpers
        import edits_stats
        import fakedep
        from edits_helpers import weight

        from trainforge.orchestration import Pipeline, step


        @step(outputs=["rows"], data=["path"])
        def load(path: str = "DATA"):
            with open(path) as source:
                return [[float(v) for v in row.values()] for row in csv.DictReader(source)]


        @step(outputs=["xs"])
        def column_x(rows):
            return [r[0] for r in rows]


        @step(outputs=["ys"])
        def column_y(rows):
            return [r[1] + r[0] / 100 for r in rows]


        @step(outputs=["shifted"])
        def shift_x(xs, extra: float = 0.0):
            return [v + extra for v in edits_helpers.shift(xs)]


        @step(outputs=["weighted"], retries=0)
        def weight_y(ys):
            return weight(ys)


        @step(outputs=["stats"])
        def summarize(shifted, weighted):
            return {"x": edits_stats.mean(shifted), "y": edits_stats.mean(weighted),
                    "tag": fakedep.TAG}


        @step(outputs=["report"])
        def report(stats):
            return edits_stats.Line(stats).render()


        pipeline = Pipeline([load, column_x, column_y, shift_x, weight_y, summarize, report],
                            name="edits")
    ''',
}
ROWS = "x,y\n1,2\n3,4\n5,6\n"


def _closure(step: str) -> set[str]:
    found, todo = set(), [step]
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo.extend(DOWNSTREAM[name])
    return found


# (case, file, old text, new text, the step the edit affects directly). Each edit changes
# what its step returns to a value no other case produces, so what follows it must run too.
EDITS = [
    ("helper body", "edits_helpers.py", "return value + OFFSET", "return value + OFFSET * 3",
     "shift_x"),
    ("helper called through an import", "edits_helpers.py", "v * 2 for", "v * 5 for",
     "weight_y"),
    ("module constant", "edits_helpers.py", "OFFSET = 1", "OFFSET = 2", "shift_x"),
    ("called module's function", "edits_stats.py", "return sum(values) / len(values)",
     "return sum(values) / len(values) + 1", "summarize"),
    ("a class a step uses", "edits_stats.py", "x={self.stats['x']:.3f}",
     "x={self.stats['x']:.2f}", "report"),
    ("step body: first step", "edits_pipe.py", "[float(v) for v", "[float(v) * 1.5 for v",
     "load"),
    ("step body: a middle step", "edits_pipe.py", "return [r[0] for r in rows]",
     "return [r[0] * 10 for r in rows]", "column_x"),
    ("step body: the other branch", "edits_pipe.py", "return [r[1] + r[0] / 100 for r",
     "return [r[1] - 1 + r[0] / 100 for r", "column_y"),
    ("step body: the join", "edits_pipe.py", '"y": edits_stats.mean(weighted)',
     '"y": edits_stats.mean(weighted) * 3', "summarize"),
    ("step body: the last step", "edits_pipe.py", "return edits_stats.Line(stats).render()",
     "return edits_stats.Line(stats).render().upper()", "report"),
    ("param default", "edits_pipe.py", "extra: float = 0.0", "extra: float = 0.5", "shift_x"),
    ("param set by the pipeline", "edits_pipe.py", "shift_x, weight_y, summarize",
     'shift_x.using(params={"extra": 2.5}), weight_y, summarize', "shift_x"),
    ("a new helper call", "edits_helpers.py", "return [_inner(v) for v in values]",
     "return [_inner(v) + len(values) for v in values]", "shift_x"),
    ("a helper's helper", "edits_helpers.py", "def _inner(value):\n    return value + OFFSET",
     "def _inner(value):\n    return value - OFFSET", "shift_x"),
    ("a helper's operator", "edits_helpers.py", "[v * 2 for v in values]",
     "[v ** 2 for v in values]", "weight_y"),
    ("a step's name of what it reads", "edits_pipe.py", "return weight(ys)",
     "return [w + 1 for w in edits_helpers.weight(ys)]", "weight_y"),
]
DATA_EDITS = [
    ("one byte of the data", "x,y\n1,2\n3,4\n5,6\n", "x,y\n1,2\n3,4\n7,6\n", "load"),
    ("a row appended to the data", "x,y\n1,2\n3,4\n5,6\n", "x,y\n1,2\n3,4\n5,6\n7,8\n",
     "load"),
    ("a value changed in place", "x,y\n1,2\n3,4\n5,6\n", "x,y\n9,2\n3,4\n5,6\n", "load"),
]
NEUTRAL_EDITS = [
    ("a comment in a helper", "edits_helpers.py", "# move every value by the offset",
     "# move each value by the offset, a comment reworded"),
    ("a comment added in a step", "edits_pipe.py", "    return [r[0] for r in rows]",
     "    # the first column\n    return [r[0] for r in rows]"),
    ("blank lines", "edits_stats.py", "\n\ndef mean", "\n\n\n\ndef mean"),
    ("a docstring", "edits_stats.py", '"""The arithmetic mean."""',
     '"""The arithmetic mean of the values, reworded."""'),
    ("a module docstring", "edits_helpers.py", '"""Helpers the steps call."""',
     '"""Helpers the steps call, documented better."""'),
    ("arguments split over lines", "edits_pipe.py",
     'return {"x": edits_stats.mean(shifted), "y"',
     'return {"x": edits_stats.mean(\n        shifted), "y"'),
    ("an uncalled function", "edits_helpers.py", "return 0", "return 1"),
    ("a new unrelated function", "edits_stats.py", "class Line:",
     "def median(values):\n    return sorted(values)[len(values) // 2]\n\n\nclass Line:"),
    ("trailing whitespace", "edits_pipe.py", "return [r[0] for r in rows]",
     "return [r[0] for r in rows]   "),
    ("the retry setting of a decorator", "edits_pipe.py", "retries=0", "retries=3"),
    ("quotes", "edits_pipe.py", "@step(outputs=[\"ys\"])", "@step(outputs=['ys'])"),
    ("redundant parentheses", "edits_stats.py", "return sum(values) / len(values)",
     "return (sum(values)) / (len(values))"),
]


class Project:
    """The project on disk, imported afresh for every run."""

    def __init__(self, root: Path, store: Store, values: ValueStore) -> None:
        self.root = root
        self.store = store
        self.values = values
        self.site = root / "site" / "lib" / "site-packages"

    def write_baseline(self) -> None:
        for name, text in BASELINE.items():
            text = textwrap.dedent(text).lstrip()
            (self.root / name).write_text(text.replace("DATA", str(self.root / "rows.csv")))
        (self.root / "rows.csv").write_text(ROWS)
        self.install_dependency("1.0")

    def install_dependency(self, version: str) -> None:
        """`fakedep` as pip leaves it in site-packages: the package and its dist-info."""
        for old in self.site.glob("fakedep-*.dist-info"):
            for file in old.iterdir():
                file.unlink()
            old.rmdir()
        package = self.site / "fakedep"
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text(f'TAG = "{version}"\n')
        info = self.site / f"fakedep-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fakedep\n"
                                       f"Version: {version}\n")
        (info / "top_level.txt").write_text("fakedep\n")

    def edit(self, name: str, old: str, new: str) -> None:
        path = self.root / name
        text = path.read_text()
        assert text.count(old) == 1, f"{old!r} must occur once in {name}"
        path.write_text(text.replace(old, new))

    def run(self) -> tuple[set[str], str]:
        """(the steps that ran, the pipeline run id)."""
        for name in MODULES:
            sys.modules.pop(name, None)
        importlib.invalidate_caches()
        linecache.clearcache()
        module = importlib.import_module("edits_pipe")
        outcome = InProcessRunner(self.store, self.values).run(module.pipeline.dag)
        assert set(outcome.steps) == STEPS
        return set(outcome.executed()), outcome.pipeline_run.pipeline_run_id


@pytest.fixture
def project(tmp_path: Path, sqlite_url: str,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    store = open_store(sqlite_url)
    store.upsert_pipeline(PipelineRecord("edits", "edits", {}))
    made = Project(tmp_path, store, ValueStore(open_object_store(tmp_path / "objects")))
    made.write_baseline()
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # edits within a second stay seen
    monkeypatch.syspath_prepend(str(made.site))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield made
    for name in MODULES:
        sys.modules.pop(name, None)
    store.close()


@pytest.mark.slow
def test_seeded_edits_invalidate_exactly_the_affected_steps(project: Project) -> None:
    assert len(EDITS) + len(DATA_EDITS) + len(NEUTRAL_EDITS) + 2 >= 30
    ran, _ = project.run()
    assert ran == STEPS  # the first run executes everything
    checked = 0
    for case, name, old, new, affected in EDITS:
        project.write_baseline()
        assert project.run()[0] == set(), f"baseline before {case!r}: nothing changed"
        project.edit(name, old, new)
        assert project.run()[0] == _closure(affected), case
        checked += 1
    for case, old, new, affected in DATA_EDITS:
        project.write_baseline()
        assert project.run()[0] == set(), f"baseline before {case!r}"
        project.edit("rows.csv", old, new)
        assert project.run()[0] == _closure(affected), case
        checked += 1
    for version, case in (("1.1", "a dependency upgraded"), ("0.9", "a dependency downgraded")):
        project.write_baseline()
        assert project.run()[0] == set(), f"baseline before {case!r}"
        project.install_dependency(version)
        assert project.run()[0] == _closure("summarize"), case
        checked += 1
    for case, name, old, new in NEUTRAL_EDITS:
        project.write_baseline()
        project.edit(name, old, new)
        assert project.run()[0] == set(), case
        checked += 1
    assert checked >= 30


def test_explain_cache_names_what_changed(project: Project) -> None:
    project.run()
    project.edit("edits_helpers.py", "return value + OFFSET", "return value + OFFSET * 3")
    project.edit("edits_pipe.py", "extra: float = 0.0", "extra: float = 0.5")
    _, changed = project.run()
    project.install_dependency("2.0")
    _, upgraded = project.run()
    _, unchanged = project.run()

    def reasons(pipeline_run_id: str, step: str) -> list[str]:
        attempt = [a for a in project.store.list_step_runs(pipeline_run_id)
                   if a.step == step][-1]
        return explain(project.store, "edits", attempt)

    assert reasons(changed, "shift_x") == [
        "miss: edits_helpers.py:_inner changed", "miss: edits_pipe.py:shift_x changed",
        "miss: param extra: 0.0 -> 0.5"]
    assert reasons(changed, "summarize") == [
        "miss: input shifted changed (its upstream output differs)"]
    assert reasons(changed, "load")[0].startswith("hit: key ")
    assert reasons(upgraded, "summarize") == ["miss: dependency fakedep: 1.0 -> 2.0"]
    assert all(reasons(unchanged, step)[0].startswith("hit: ") for step in STEPS)
