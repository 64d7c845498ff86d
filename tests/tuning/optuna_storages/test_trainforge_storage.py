"""trainforge's own tests of what Optuna's vendored tests check only on another storage, or where
trainforge's storage departs from Optuna's (README.md): which running trials go stale, that a
stale trial is failed once, bad heartbeat durations, what a pickled storage carries, and that
opening it warns nothing."""

from __future__ import annotations

import io
import pickle
import time
import warnings
from typing import Any

import optuna
import pytest
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import RetryHeartbeatStaleTrialCallback, fail_stale_trials
from optuna.trial import TrialState
from trainforge_suppliers import STORAGE_MODES, StorageSupplier

from trainforge.tuning import work

LIVE_PACKAGES = {"sqlalchemy", "sqlite3", "psycopg", "threading", "_thread"}  # engines, locks
pytestmark = [pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning"),
              pytest.mark.filterwarnings("ignore:Heartbeat of storage:UserWarning")]


@pytest.mark.parametrize("mode", STORAGE_MODES)
def test_only_a_trial_that_beat_and_went_silent_is_failed(mode: str) -> None:
    with StorageSupplier(mode, heartbeat_interval=1, grace_period=1) as storage:
        study = optuna.create_study(storage=storage)
        client, dead, alive = study.ask(), study.ask(), study.ask()
        storage.record_heartbeat(dead._trial_id)
        time.sleep(1.5)
        storage.record_heartbeat(alive._trial_id)
        fail_stale_trials(study)
        states = {trial.number: trial.state for trial in study.trials}
        assert states == {client.number: TrialState.RUNNING, dead.number: TrialState.FAIL,
                          alive.number: TrialState.RUNNING}
        study.tell(client, 1.0)  # an ask/tell client that never beat still owns its trial
        assert study.trials[client.number].state is TrialState.COMPLETE


@pytest.mark.parametrize("mode", STORAGE_MODES)
def test_a_worker_leaves_an_ask_tell_clients_trial_running(mode: str) -> None:
    with StorageSupplier(mode, heartbeat_interval=1, grace_period=1) as storage:
        study = optuna.create_study(storage=storage)
        client = study.ask()
        ran = work(study, storage, lambda trial: trial.suggest_float("x", 0, 1), bounded=False,
                   deadline=time.time() + 2.5)  # looks for stale trials before each of its own
        assert ran >= 1
        assert study.trials[client.number].state is TrialState.RUNNING
        study.tell(client, 0.5)
        assert study.trials[client.number].state is TrialState.COMPLETE


@pytest.mark.parametrize("mode", STORAGE_MODES)
def test_a_stale_trial_is_failed_and_retried_by_one_worker_only(mode: str) -> None:
    retry = RetryHeartbeatStaleTrialCallback()
    with StorageSupplier(mode, heartbeat_interval=1, grace_period=1,
                         heartbeat_stale_trial_callback=retry) as first:
        study = optuna.create_study(storage=first, study_name="shared")
        dead = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
        first.record_heartbeat(dead._trial_id)
        time.sleep(1.5)
        second = pickle.loads(pickle.dumps(first))  # another worker on the same database
        seen_stale_by_second = second._get_stale_trial_ids(study._study_id)
        fail_stale_trials(study)
        assert seen_stale_by_second == [dead._trial_id]
        with pytest.raises(UpdateFinishedTrialError):
            second.set_trial_state_values(dead._trial_id, TrialState.FAIL)
        trials = optuna.load_study(study_name="shared", storage=second).trials
        assert [t.state for t in trials] == [TrialState.FAIL, TrialState.WAITING]
        assert trials[1].params == trials[0].params
        second.backend.close()


@pytest.mark.parametrize(("options", "message"), [
    ({"heartbeat_interval": 0}, "heartbeat_interval_s must be a positive whole number of "
                                "seconds, got 0"),
    ({"heartbeat_interval": -1}, "heartbeat_interval_s .* got -1"),
    ({"heartbeat_interval": 1, "grace_period": 0}, "grace_period_s .* got 0"),
    ({"grace_period": -5}, "grace_period_s must be a positive whole number of seconds, got -5"),
])
def test_heartbeat_durations_must_be_positive(options: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message), StorageSupplier("sqlite", **options):
        pass


class _RecordingUnpickler(pickle.Unpickler):
    """Unpickles, noting the module of every class the pickle names."""

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.modules: set[str] = set()

    def find_class(self, module: str, name: str) -> Any:
        self.modules.add(module)
        return super().find_class(module, name)


@pytest.mark.parametrize("mode", STORAGE_MODES)
def test_a_pickled_storage_carries_its_settings_and_no_connection(mode: str) -> None:
    with StorageSupplier(mode) as storage:  # as trainforge's workers open it
        study = optuna.create_study(storage=storage, study_name="before")
        unpickler = _RecordingUnpickler(pickle.dumps(storage))
        copy = unpickler.load()
        live = {m for m in unpickler.modules if m.split(".")[0] in LIVE_PACKAGES}
        assert "trainforge.storage.sql_tuning_journal" in unpickler.modules and not live
        optuna.create_study(storage=storage, study_name="after")
        assert {s.study_name for s in copy.get_all_studies()} == {"before", "after"}
        assert copy.get_heartbeat_interval() == storage.get_heartbeat_interval()
        assert type(copy.get_heartbeat_stale_trial_callback()) is type(
            storage.get_heartbeat_stale_trial_callback())
        copy_study = optuna.load_study(study_name="before", storage=copy)
        copy_study.optimize(lambda trial: trial.suggest_float("x", 0, 1), n_trials=1)
        assert [t.state for t in study.trials] == [TrialState.COMPLETE]
        copy.backend.close()


@pytest.mark.parametrize("mode", STORAGE_MODES)
def test_heartbeats_are_no_experiment_in_trainforge(mode: str) -> None:
    """Optuna's RDBStorage warns that `heartbeat_interval` is experimental; trainforge's
    workers rely on heartbeats, always on in its storage, which warns nothing."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", optuna.exceptions.ExperimentalWarning)
        with StorageSupplier(mode, heartbeat_interval=2) as storage:
            study = optuna.create_study(storage=storage)
            study.optimize(lambda _: 1.0, n_trials=1)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE]
