"""The tracking API is reachable from `trainforge` and pinned in `trainforge.tracking`."""

import trainforge
from trainforge import tracking


def test_tracking_exports_are_pinned():
    assert tracking.__all__ == [
        "CheckpointEntry", "CodeEntry", "CodeRead", "DEFAULT_CRASH_TIMEOUT_S", "DIFF_ARTIFACT",
        "DataEntry", "GitState", "LaunchShape", "PbtEntry", "RegistrationEntry", "ResumeEntry",
        "RunComparison",
        "RunHandle", "RunRecorder", "SilentRun", "SpecEntry", "SystemRecord", "TuningEntry",
        "active_run", "capture_environment", "code_object_key", "collect_crashed_runs",
        "compare_runs", "comparison", "default_store", "get_metric_history", "get_run",
        "git_state", "installed_packages", "is_alive", "open_run", "parse_filter",
        "parse_sort", "process_record", "recorded_spec_of", "replay_in_background",
        "replay_spills", "search_runs", "start_run", "system_of", "where_running"]


def test_the_top_level_package_exposes_the_run_api():
    for name in ["start_run", "active_run", "search_runs", "get_run", "get_metric_history",
                 "compare_runs", "RunHandle", "QueryError", "StoreUnavailable"]:
        assert name in trainforge.__all__
        assert getattr(trainforge, name) is not None
    assert trainforge.start_run is tracking.start_run


def test_top_level_search_and_history_use_the_default_store(tmp_path):
    with trainforge.start_run("api", params={"lr": 0.1}, code_dir=tmp_path) as run:
        run.log_metric("loss", 0.5, 1)
    assert trainforge.get_run(run.run_id).metrics == {"loss": 0.5}
    assert [r.run_id for r in trainforge.search_runs("api", filter="params.lr = 0.1")] == [
        run.run_id]
    assert [p.value for p in trainforge.get_metric_history(run.run_id, "loss")] == [0.5]
