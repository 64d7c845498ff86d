"""A run's `system` entries are one typed record: written as its entries, merged entry by
entry, read back as they were written; an entry this version does not know is kept in the
row and not read; a malformed one is refused naming the entry."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from trainforge.tracking import (
    CheckpointEntry,
    CodeRead,
    DataEntry,
    SpecEntry,
    SystemRecord,
    TuningEntry,
    open_run,
    process_record,
    system_of,
)


def test_entries_hold_what_was_recorded_and_nothing_else() -> None:
    record = SystemRecord(spec=SpecEntry(path=None, overrides=["a=1"]),
                          data=DataEntry(contract=None, target="y"), pipeline_run="p1")
    assert record.entries() == {"spec": {"path": None, "overrides": ["a=1"], "redacted": []},
                                "data": {"contract": None, "target": "y"},
                                "pipeline_run": "p1"}


def test_merged_records_take_the_later_entry_whole() -> None:
    study = SystemRecord(tuning=TuningEntry(study="s"), pipeline_run="p1")
    trial = SystemRecord(tuning=TuningEntry(study="s", trial=3))
    assert study.merged(trial).entries() == {"tuning": {"study": "s", "trial": 3},
                                             "pipeline_run": "p1"}


def test_a_malformed_entry_is_refused_naming_it() -> None:
    with pytest.raises(ValidationError, match="checkpoint.location"):
        SystemRecord.model_validate({"checkpoint": {"policy": {}}})
    with pytest.raises(ValidationError, match="process.pid"):
        SystemRecord.model_validate({"process": {"host": "h", "pid": "not a pid"}})


def test_a_run_reads_back_what_was_written_and_keeps_what_it_does_not_know(
        store, tmp_path) -> None:
    from trainforge.config import Settings
    from trainforge.session import Session
    from trainforge.storage.artifacts import open_artifact_store

    settings = Settings.from_env({"TRAINFORGE_HOME": str(tmp_path)})
    written = process_record().merged(SystemRecord(checkpoint=CheckpointEntry(
        location="s3://b/ckpt/r", policy={"keep_last": 3})))
    session = Session(settings, store, open_artifact_store(tmp_path / "a"))
    with open_run("e", session, system=written, code=CodeRead(tmp_path)) as run:
        store.set_system(run.run_id, {"added_later": {"x": 1}})
        run.set_system(SystemRecord(pipeline_run="p1"))
    stored = store.get_run(run.run_id)
    assert system_of(stored) == written.merged(SystemRecord(pipeline_run="p1"))
    assert stored.system["added_later"] == {"x": 1}


def test_the_process_entry_names_who_started_the_run() -> None:
    assert process_record("alice").entries()["process"]["user"] == "alice"
    older = SystemRecord.model_validate({"process": {"host": "h", "pid": 1}})
    assert older.process is not None and older.process.user == ""  # recorded before users
