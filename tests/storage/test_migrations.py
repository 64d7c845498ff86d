"""Schema migrations: applied once on first use, equal to tables.py, safe to open concurrently."""

from __future__ import annotations

import json
import multiprocessing
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from trainforge.entities import MetricPoint, ModelStage, Pipeline, Role, RunStatus
from trainforge.storage import SqlStore, all_items, db
from trainforge.storage.tables import Base

REGISTRY_TABLES = {"model_stage_changes", "model_aliases", "webhooks", "webhook_deliveries"}
TUNING_TABLES = {"tuning_journal", "tuning_heartbeats"}
DATA_TABLES = {"data_tags", "data_profiles"}
PIPELINE_RUN_TABLES = {"pipeline_runs", "step_runs"}
OUTBOX_TABLES = {"outbox_events", "event_deliveries"}
AUTH_TABLES = {"users", "api_tokens"}
SINCE_0004 = (REGISTRY_TABLES | TUNING_TABLES | DATA_TABLES | PIPELINE_RUN_TABLES | OUTBOX_TABLES
              | AUTH_TABLES)
TABLES = {"pipelines", "experiments", "runs", "metrics", "data_versions", "model_versions",
          "run_metrics", "metric_batches", "checkpoints", *REGISTRY_TABLES, *TUNING_TABLES,
          *DATA_TABLES, *PIPELINE_RUN_TABLES, *OUTBOX_TABLES, *AUTH_TABLES}
# A database saved at revision 0001 (made by upgrading an empty file to "0001", then inserting
# one experiment, data version, run with summary metrics, six metric points and a model version).
SAVED_0001 = Path(__file__).parent / "data" / "trainforge-0001.db"
# A database saved at revision 0003 by the store of that revision: a pipeline, a data version,
# three runs "r0".."r2" of it (r2 still running), each with nested params, `process` and
# `checkpoint` tags, six loss points, a summary test_auc and a checkpoint at step 5, and a model
# version of r1.
SAVED_0003 = Path(__file__).parent / "data" / "trainforge-0003.db"


def _revision_and_tables(url: str) -> tuple[str | None, set[str]]:
    engine = db.make_engine(url)
    try:
        with engine.connect() as connection:
            tables = set(inspect(connection).get_table_names()) - {"alembic_version"}
            return db.current_revision(connection), tables
    finally:
        engine.dispose()


def test_the_schema_revision_the_store_expects_is_alembics_head() -> None:
    assert db.SCHEMA_REVISION == db.head_revision()


def test_a_fresh_database_is_migrated_to_head(db_url: str) -> None:
    assert _revision_and_tables(db_url) == (None, set())
    SqlStore(db_url).close()
    assert _revision_and_tables(db_url) == (db.head_revision(), TABLES)


def test_migrated_schema_equals_the_data_model(db_url: str) -> None:
    SqlStore(db_url).close()
    engine = db.make_engine(db_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
    finally:
        engine.dispose()


def test_reopening_a_migrated_database_does_not_migrate_again(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    upgrades: list[Any] = []
    real_upgrade = db.upgrade

    def counting_upgrade(connection: Any) -> None:
        upgrades.append(connection)
        real_upgrade(connection)

    monkeypatch.setattr(db, "upgrade", counting_upgrade)
    SqlStore(sqlite_url).close()
    SqlStore(sqlite_url).close()
    assert len(upgrades) == 1


def _downgraded(url: str, revision: str, table: str = "runs") -> tuple[set[str], set[str]]:
    """A database made at the head revision, then downgraded to `revision`: the names of
    `table`'s columns and indexes afterwards (empty when the table is gone)."""
    SqlStore(url).close()
    engine = db.make_engine(url)
    try:
        with engine.begin() as connection:
            command.downgrade(db.alembic_config(connection), revision)
        with engine.connect() as connection:
            inspector = inspect(connection)
            if not inspector.has_table(table):
                return set(), set()
            return ({c["name"] for c in inspector.get_columns(table)},
                    {str(i["name"]) for i in inspector.get_indexes(table)})
    finally:
        engine.dispose()


def test_downgrade_to_base_removes_every_table(sqlite_url: str) -> None:
    _downgraded(sqlite_url, "base")
    assert _revision_and_tables(sqlite_url) == (None, set())


def test_downgrade_to_0002_removes_only_the_checkpoints_table(db_url: str) -> None:
    _downgraded(db_url, "0002")
    assert _revision_and_tables(db_url) == (
        "0002", TABLES - {"checkpoints"} - SINCE_0004)


def _at_revision(url: str, revision: str) -> None:
    """Bring an empty database at `url` to `revision` (not to head)."""
    engine = db.make_engine(url)
    try:
        with engine.begin() as connection:
            command.upgrade(db.alembic_config(connection), revision)
    finally:
        engine.dispose()


def test_a_database_at_0003_upgrades_keeping_its_runs(db_url: str) -> None:
    _at_revision(db_url, "0003")
    engine = db.make_engine(db_url)
    try:
        with engine.begin() as connection:
            connection.execute(text(
                "INSERT INTO experiments (experiment_id, name, description, owner, created_at) "
                "VALUES ('e1', 'fraud', '', '', '2026-03-01 10:00:00')"))
            for number in range(3):
                connection.execute(text(
                    "INSERT INTO runs (run_id, experiment_id, status, params, tags, environment,"
                    " artifact_uri, started_at, device_hours) VALUES (:run_id, 'e1', 'completed',"
                    " :params, :tags, '{}', 'file:///a', :started_at, 0)"),
                    {"run_id": f"r{number}", "params": '{"lr": 0.1}',
                     "tags": '{"process": {"pid": 7}}',
                     "started_at": f"2026-03-01 10:00:0{number}"})
    finally:
        engine.dispose()
    store = SqlStore(db_url)
    try:
        runs = all_items(lambda cursor: store.list_runs(limit=2, cursor=cursor))
        assert [run.run_id for run in runs] == ["r2", "r1", "r0"]
        for run in runs:
            assert (run.params, run.tags, run.system, run.spec_hash) == (
                {"lr": 0.1}, {"process": {"pid": 7}}, {}, None)
        store.set_system("r1", {"process": {"pid": 8}})
        new = store.create_run("e1", {}, {}, "file:///b", spec_hash="a" * 64)
        assert store.get_run("r1").system == {"process": {"pid": 8}}
        assert store.list_runs(spec_hash="a" * 64).items == (new,)
    finally:
        store.close()
    assert _revision_and_tables(db_url) == (db.head_revision(), TABLES)


def test_downgrade_to_0003_drops_the_system_columns(db_url: str) -> None:
    columns, indexes = _downgraded(db_url, "0003")
    assert not {"system", "spec_hash"} & columns and "ix_runs_spec_hash" not in indexes
    assert _revision_and_tables(db_url) == ("0003", TABLES - SINCE_0004)


def test_a_database_at_0004_upgrades_keeping_its_model_versions(db_url: str) -> None:
    _at_revision(db_url, "0004")
    engine = db.make_engine(db_url)
    try:
        with engine.begin() as connection:
            connection.execute(text(
                "INSERT INTO experiments (experiment_id, name, description, owner, created_at) "
                "VALUES ('e1', 'fraud', '', '', '2026-03-01 10:00:00')"))
            connection.execute(text(
                "INSERT INTO runs (run_id, experiment_id, status, params, tags, environment,"
                " artifact_uri, started_at, device_hours) VALUES ('r1', 'e1', 'completed',"
                " '{}', '{}', '{}', 'file:///a', '2026-03-01 10:00:00', 0)"))
            for number in (1, 2):
                connection.execute(text(
                    "INSERT INTO model_versions (model_name, version, run_id, stage,"
                    " artifact_uri, metrics, git_commit, created_at) VALUES ('fraud_detector',"
                    " :version, 'r1', 'staging', 'file:///a/model', '{\"test_roc_auc\": 0.9}',"
                    " 'abc', '2026-03-01 10:00:00')"), {"version": str(number)})
    finally:
        engine.dispose()
    store = SqlStore(db_url)
    try:
        old = store.get_model_version("fraud_detector", "1")
        assert (old.stage, old.metrics, old.git_commit) == (
            ModelStage.STAGING, {"test_roc_auc": 0.9}, "abc")
        assert (old.features_hash, old.environment) == (None, {})
        assert store.list_stage_changes("fraud_detector").items == ()
        store.change_stage("fraud_detector", "1", ModelStage.PRODUCTION,
                           expected_from=ModelStage.STAGING, expected_holder=None, user="ann",
                           reason="first")
        store.change_stage("fraud_detector", "2", ModelStage.PRODUCTION,
                           expected_from=ModelStage.STAGING, expected_holder="1", user="ann",
                           reason="better")
        assert store.get_model_version("fraud_detector", "1").stage is ModelStage.ARCHIVED
        holder = store.get_stage_holder("fraud_detector", ModelStage.PRODUCTION)
        assert holder is not None and holder.version == "2"
        new = store.create_model_version("fraud_detector", "r1", "u", ModelStage.STAGING, {},
                                         features_hash="f" * 64, environment={"python": "3.12"})
        assert (new.version, new.features_hash, new.environment) == (
            "3", "f" * 64, {"python": "3.12"})
    finally:
        store.close()
    assert _revision_and_tables(db_url) == (db.head_revision(), TABLES)


def test_downgrade_to_0004_drops_the_registry_tables_and_columns(db_url: str) -> None:
    columns, indexes = _downgraded(db_url, "0004", "model_versions")
    assert not {"features_hash", "environment"} & columns
    assert "uq_model_versions_single_holder" not in indexes
    assert _revision_and_tables(db_url) == ("0004", TABLES - SINCE_0004)


def test_downgrade_to_0005_drops_only_the_tuning_tables(db_url: str) -> None:
    _downgraded(db_url, "0005")
    assert _revision_and_tables(db_url) == (
        "0005", TABLES - TUNING_TABLES - DATA_TABLES - PIPELINE_RUN_TABLES - OUTBOX_TABLES
        - AUTH_TABLES)


def test_downgrade_to_0006_drops_only_the_data_tags_and_profiles(db_url: str) -> None:
    _downgraded(db_url, "0006")
    assert _revision_and_tables(db_url) == (
        "0006", TABLES - DATA_TABLES - PIPELINE_RUN_TABLES - OUTBOX_TABLES - AUTH_TABLES)


def test_downgrade_to_0007_drops_only_the_data_profiles(db_url: str) -> None:
    _downgraded(db_url, "0007")
    assert _revision_and_tables(db_url) == (
        "0007", TABLES - {"data_profiles"} - PIPELINE_RUN_TABLES - OUTBOX_TABLES - AUTH_TABLES)


def test_downgrade_to_0008_drops_only_the_pipeline_and_step_runs(db_url: str) -> None:
    _downgraded(db_url, "0008")
    assert _revision_and_tables(db_url) == (
        "0008", TABLES - PIPELINE_RUN_TABLES - OUTBOX_TABLES - AUTH_TABLES)


def test_downgrade_to_0009_drops_only_the_outbox(db_url: str) -> None:
    columns, _ = _downgraded(db_url, "0009", "webhook_deliveries")
    assert "event_delivery_id" not in columns
    assert _revision_and_tables(db_url) == ("0009", TABLES - OUTBOX_TABLES - AUTH_TABLES)


def test_a_database_at_0010_upgrades_recording_each_runs_data_entry(db_url: str) -> None:
    """Export and serving read a run's data contract and target from its system entries, a
    resume and the promotion gates its resolved spec; runs recorded before have them filled
    in from their recorded spec (params), nothing else."""
    _at_revision(db_url, "0010")
    engine = db.make_engine(db_url)
    params = {"r1": {"data": {"source": "d/*.parquet", "target": "is_fraud",
                              "contract": "/p/contract.yaml"}},
              "r2": {"data": {"target": "label"}},
              "r3": {"lr": 0.1},  # not a pipeline run
              "r4": {"data": {"target": "old"}}}
    spec = {"path": "/p/pipeline.yaml", "overrides": []}
    system = {"r4": {"data": {"contract": None, "target": "kept"}},
              "r1": {"job": "j", "spec": spec}}
    try:
        with engine.begin() as connection:
            connection.execute(text(
                "INSERT INTO experiments (experiment_id, name, description, owner, created_at) "
                "VALUES ('e1', 'fraud', '', '', '2026-03-01 10:00:00')"))
            for run_id, run_params in params.items():
                connection.execute(text(
                    "INSERT INTO runs (run_id, experiment_id, status, params, tags, environment,"
                    " artifact_uri, started_at, device_hours, system) VALUES (:run_id, 'e1',"
                    " 'completed', :params, '{}', '{}', 'file:///a', '2026-03-01 10:00:00', 0,"
                    " :system)"), {"run_id": run_id, "params": json.dumps(run_params),
                                   "system": json.dumps(system.get(run_id, {}))})
    finally:
        engine.dispose()
    store = SqlStore(db_url)
    try:
        assert store.get_run("r1").system == {
            "job": "j", "data": {"contract": "/p/contract.yaml", "target": "is_fraud"},
            "spec": spec, "resolved_spec": params["r1"]}
        assert store.get_run("r2").system == {"data": {"contract": None, "target": "label"}}
        assert store.get_run("r3").system == {}
        assert store.get_run("r4").system == {"data": {"contract": None, "target": "kept"}}
    finally:
        store.close()


def test_downgrade_to_0011_drops_only_the_users_and_tokens(db_url: str) -> None:
    _downgraded(db_url, "0011")
    assert _revision_and_tables(db_url) == ("0011", TABLES - AUTH_TABLES)


def test_a_database_at_0011_upgrades_to_users_and_tokens(db_url: str) -> None:
    """Users and tokens start empty in a database made before them; its runs stay."""
    _at_revision(db_url, "0011")
    engine = db.make_engine(db_url)
    try:
        with engine.begin() as connection:
            connection.execute(text(
                "INSERT INTO experiments (experiment_id, name, description, owner, created_at) "
                "VALUES ('e1', 'fraud', '', '', '2026-03-01 10:00:00')"))
    finally:
        engine.dispose()
    store = SqlStore(db_url)
    try:
        assert store.list_users().items == () and store.list_tokens().items == ()
        store.add_user("ann", Role.ADMIN)
        token = store.add_token("t1", "ann", Role.VIEWER, "0" * 64, "ci", None)
        assert store.get_token("t1") == token
        assert [e.name for e in store.list_experiments().items] == ["fraud"]
    finally:
        store.close()
    assert _revision_and_tables(db_url) == (db.head_revision(), TABLES)


def test_a_database_at_0012_upgrades_with_its_versions_unlabelled(db_url: str) -> None:
    """Versions registered before labels read back with none; new ones may take one."""
    _at_revision(db_url, "0012")
    engine = db.make_engine(db_url)
    try:
        with engine.begin() as connection:
            connection.execute(text(
                "INSERT INTO experiments (experiment_id, name, description, owner, created_at) "
                "VALUES ('e1', 'fraud', '', '', '2026-03-01 10:00:00')"))
            connection.execute(text(
                "INSERT INTO runs (run_id, experiment_id, status, params, tags, environment,"
                " artifact_uri, started_at, device_hours) VALUES ('r1', 'e1', 'completed',"
                " '{}', '{}', '{}', 'file:///a', '2026-03-01 10:00:00', 0)"))
            connection.execute(text(
                "INSERT INTO model_versions (model_name, version, run_id, stage, artifact_uri,"
                " metrics, git_commit, created_at) VALUES ('fraud_detector', '1', 'r1',"
                " 'staging', 'file:///a/model', '{}', 'abc', '2026-03-01 10:00:00')"))
    finally:
        engine.dispose()
    store = SqlStore(db_url)
    try:
        old = store.get_model_version("fraud_detector", "1")
        assert (old.label, old.stage, old.git_commit) == (None, ModelStage.STAGING, "abc")
        new = store.create_model_version("fraud_detector", "r1", "u", ModelStage.NONE, {},
                                         label="3.1")
        assert (new.version, new.label) == ("2", "3.1")
        assert store.get_model_version_by_label("fraud_detector", "3.1") == new
    finally:
        store.close()
    assert _revision_and_tables(db_url) == (db.head_revision(), TABLES)


def test_downgrade_to_0012_drops_the_labels_keeping_the_versions(db_url: str) -> None:
    """The versions stay, with their history and aliases (which reference them)."""
    store = SqlStore(db_url)
    try:
        run = store.create_run(store.get_or_create_experiment("e").experiment_id, {}, {},
                               "file:///a")
        for label in ("1.0", None):
            store.create_model_version("m", run.run_id, "u", ModelStage.STAGING, {},
                                       label=label)
        store.set_alias("m", "champion", "1")
    finally:
        store.close()
    columns, indexes = _downgraded(db_url, "0012", "model_versions")
    assert "label" not in columns and "uq_model_versions_label" not in indexes
    assert "uq_model_versions_single_holder" in indexes
    assert _revision_and_tables(db_url) == ("0012", TABLES)
    engine = db.make_engine(db_url)
    try:
        with engine.connect() as connection:
            assert connection.execute(text(
                "SELECT version FROM model_versions ORDER BY version")).scalars().all() == [
                "1", "2"]
            assert connection.execute(text(
                "SELECT count(*) FROM model_stage_changes")).scalar() == 2
    finally:
        engine.dispose()


def test_a_database_at_0013_upgrades_with_its_pipelines_as_their_runs_recorded_them(
        db_url: str) -> None:
    """Pipelines recorded before registration read back unregistered, and may be registered."""
    _at_revision(db_url, "0013")
    engine = db.make_engine(db_url)
    try:
        with engine.begin() as connection:
            connection.execute(text(
                "INSERT INTO pipelines (pipeline_id, name, dag_config, created_at) "
                "VALUES ('fraud', 'fraud', '{\"steps\": []}', '2026-03-01 10:00:00')"))
    finally:
        engine.dispose()
    store = SqlStore(db_url)
    try:
        old = store.get_pipeline("fraud")
        assert (old.dag_config, old.spec, old.registered_at) == ({"steps": []}, None, None)
        registered = store.register_pipeline(Pipeline("fraud", "fraud", {"steps": []},
                                                      spec={"name": "fraud"}))
        assert registered.spec == {"name": "fraud"} and registered.registered_at is not None
    finally:
        store.close()
    assert _revision_and_tables(db_url) == (db.head_revision(), TABLES)


def test_downgrade_to_0013_drops_what_was_registered_keeping_the_pipelines(db_url: str) -> None:
    store = SqlStore(db_url)
    try:
        store.register_pipeline(Pipeline("fraud_model_v2", "fraud", {}, spec={"name": "fraud"}))
    finally:
        store.close()
    columns, _ = _downgraded(db_url, "0013", "pipelines")
    assert {"spec", "registered_at"}.isdisjoint(columns) and "dag_config" in columns
    engine = db.make_engine(db_url)
    try:
        with engine.connect() as connection:
            assert connection.execute(text("SELECT pipeline_id FROM pipelines")).scalars().all(
                ) == ["fraud_model_v2"]
    finally:
        engine.dispose()


def test_threads_opening_a_fresh_database_together_all_succeed(db_url: str) -> None:
    def open_and_write(_: int) -> str:
        store = SqlStore(db_url)
        try:
            return store.get_or_create_experiment("shared").experiment_id
        finally:
            store.close()

    with ThreadPoolExecutor(4) as pool:
        assert len(set(pool.map(open_and_write, range(4)))) == 1


def _open_in_process(url: str, barrier: Any) -> None:
    barrier.wait()
    store = SqlStore(url)
    store.get_or_create_experiment("shared")
    store.close()


def test_processes_opening_a_fresh_sqlite_database_together_all_succeed(sqlite_url: str) -> None:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(4)
    workers = [context.Process(target=_open_in_process, args=(sqlite_url, barrier))
               for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [worker.exitcode for worker in workers] == [0, 0, 0, 0]
    assert _revision_and_tables(sqlite_url) == (db.head_revision(), TABLES)


def test_a_database_saved_at_0001_upgrades_keeping_its_data(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(SAVED_0001, path)
    store = SqlStore(f"sqlite:///{path}")
    try:
        run = store.get_run("r1")
        assert (run.status, run.params, run.tags) == (
            RunStatus.COMPLETED, {"training": {"optimizer": {"lr": 0.001}}}, {"team": "risk"})
        assert (run.system, run.spec_hash) == ({}, None)
        # summary metrics (NaN stored as null) win over the last logged point of each series
        assert run.metrics["test_auc"] == 0.93 and run.metrics["bad"] != run.metrics["bad"]
        assert (run.metrics["loss"], run.metrics["val_auc"]) == (0.2, 0.9)
        assert (run.git_commit, run.data_version_id, run.device_hours) == ("abc", "d1", 0.0)
        assert [p.step for p in store.get_metric_history("r1", "loss").items] == [0, 1, 2, 3, 4]
        assert store.get_model_version("fraud_detector", "1").metrics == {"test_auc": 0.93}
        [found] = store.search_runs(filter="metrics.test_auc > 0.9 and params.training.optimizer.lr"
                                           " <= 0.001").items
        assert found.run_id == "r1"
        store.log_metrics("r1", [MetricPoint("loss", 0.1, 5, 0.0)])
        assert store.get_run("r1").metrics["loss"] == 0.1
        store.create_model_version("fraud_detector", "r1", "u", ModelStage.NONE, {})
        store.record_checkpoint("r1", 4, "file:///ckpt/4")
        assert [c.step for c in store.list_checkpoints("r1").items] == [4]
        store.set_system("r1", {"checkpoint": {"location": "file:///ckpt"}})
        assert store.get_run("r1").system == {"checkpoint": {"location": "file:///ckpt"}}
    finally:
        store.close()
    assert _revision_and_tables(f"sqlite:///{path}") == (db.head_revision(), TABLES)


def test_a_database_saved_at_0003_upgrades_keeping_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(SAVED_0003, path)
    store = SqlStore(f"sqlite:///{path}")
    try:
        runs = all_items(lambda cursor: store.list_runs(pipeline_id="fraud_model", limit=2,
                                                        cursor=cursor))
        assert [run.run_id for run in runs] == ["r2", "r1", "r0"]
        assert [run.status for run in runs] == [RunStatus.RUNNING, *[RunStatus.COMPLETED] * 2]
        for number, run in enumerate(reversed(runs)):
            assert (run.system, run.spec_hash) == ({}, None)
            assert run.params["training"]["optimizer"]["lr"] == 10.0 ** -(number + 2)
            assert run.tags == {"process": {"host": "node1", "pid": 100 + number},
                                "checkpoint": {"location": f"file:///ckpt/r{number}"}}
            assert (run.metrics["test_auc"], run.metrics["loss"]) == (0.9 + number / 100, 1 / 6)
            assert (run.data_version_id, run.git_commit) == ("d1", "abc")
            assert [c.step for c in store.list_checkpoints(run.run_id).items] == [5]
            assert len(store.get_metric_history(run.run_id, "loss").items) == 6
        assert store.log_metrics("r2", [MetricPoint("loss", 0.1, 6, 0.0)], batch_id="b1") is False
        assert store.get_model_version("fraud_detector", "1").run_id == "r1"
        store.set_system("r2", {"process": {"host": "node1", "pid": 102}})
        assert store.get_run("r2").system == {"process": {"host": "node1", "pid": 102}}
        assert store.list_runs(spec_hash="0" * 64).items == ()
    finally:
        store.close()
    assert _revision_and_tables(f"sqlite:///{path}") == (db.head_revision(), TABLES)


def test_downgrade_to_0001_puts_summary_metrics_back(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(SAVED_0001, path)
    SqlStore(f"sqlite:///{path}").close()
    engine = db.make_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as connection:
            command.downgrade(db.alembic_config(connection), "0001")
        with engine.connect() as connection:
            [metrics] = connection.exec_driver_sql("SELECT metrics FROM runs").one()
    finally:
        engine.dispose()
    assert json.loads(metrics) == {"bad": None, "test_auc": 0.93}
