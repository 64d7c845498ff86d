"""The registry's store on SQLite and PostgreSQL: stage changes archive the holder in one
transaction, concurrent changes decided on one state cannot both win, history, aliases and the
webhook log."""

from __future__ import annotations

import multiprocessing
import threading
from typing import Any

import pytest

from trainforge.entities import ModelStage as S
from trainforge.entities import StageOutcome
from trainforge.errors import Conflict, NotFound
from trainforge.storage import Store, all_items, open_store

MODEL = "fraud_detector"


def _versions(store: Store, count: int, stage: S = S.STAGING) -> list[str]:
    experiment = store.get_or_create_experiment("fraud")
    run = store.create_run(experiment.experiment_id, {}, {}, "file:///a")
    return [store.create_model_version(MODEL, run.run_id, "file:///a/model", stage, {}).version
            for _ in range(count)]


def _move(store: Store, version: str, to: S, frm: S = S.STAGING,
          holder: str | None = None) -> Any:
    return store.change_stage(MODEL, version, to, expected_from=frm, expected_holder=holder,
                              user="ann", reason=f"{version} to {to.value}")


def _stages(store: Store) -> dict[str, S]:
    return {v.version: v.stage for v in store.list_model_versions(MODEL).items}


def test_promoting_archives_the_previous_holder_and_records_both(store: Store) -> None:
    v1, v2 = _versions(store, 2)
    _move(store, v1, S.PRODUCTION)
    change = _move(store, v2, S.PRODUCTION, holder=v1)
    assert _stages(store) == {"1": S.ARCHIVED, "2": S.PRODUCTION}
    assert (change.from_stage, change.to_stage, change.outcome, change.user) == (
        S.STAGING, S.PRODUCTION, StageOutcome.PROMOTED, "ann")
    history = [(c.version, c.from_stage, c.to_stage, c.outcome)
               for c in store.list_stage_changes(MODEL).items]
    assert history == [
        ("1", None, S.STAGING, StageOutcome.REGISTERED),
        ("2", None, S.STAGING, StageOutcome.REGISTERED),
        ("1", S.STAGING, S.PRODUCTION, StageOutcome.PROMOTED),
        ("1", S.PRODUCTION, S.ARCHIVED, StageOutcome.REPLACED),
        ("2", S.STAGING, S.PRODUCTION, StageOutcome.PROMOTED),
    ]
    holder = store.get_stage_holder(MODEL, S.PRODUCTION)
    assert holder is not None and holder.version == "2"
    assert store.get_stage_holder(MODEL, S.CANARY) is None


def test_a_change_decided_on_a_stale_state_conflicts_and_writes_nothing(store: Store) -> None:
    v1, v2 = _versions(store, 2)
    _move(store, v1, S.CANARY)
    before = all_items(lambda cursor: store.list_stage_changes(MODEL, cursor=cursor))
    with pytest.raises(Conflict, match="canary is held by version 1 now, not no version"):
        _move(store, v2, S.CANARY, holder=None)
    with pytest.raises(Conflict, match="version '1' is in canary now, not staging"):
        _move(store, v1, S.PRODUCTION, frm=S.STAGING)
    assert _stages(store) == {"1": S.CANARY, "2": S.STAGING}
    assert all_items(lambda cursor: store.list_stage_changes(MODEL, cursor=cursor)) == before


def test_refusals_are_recorded_and_leave_the_stage(store: Store) -> None:
    [v1] = _versions(store, 1)
    report = [{"gate": "max_drop:test_roc_auc", "passed": False, "figures": {"drop": 0.02},
               "message": "too low"}]
    refusal = store.record_refusal(MODEL, v1, S.PRODUCTION, user="bob", reason="try",
                                   gate_report=report)
    assert (refusal.outcome, refusal.from_stage, refusal.to_stage) == (
        StageOutcome.REFUSED, S.STAGING, S.PRODUCTION)
    assert store.list_stage_changes(MODEL, v1).items[-1].gate_report == tuple(report)
    assert _stages(store) == {"1": S.STAGING}


def test_stage_holder_is_asked_for_single_holder_stages_only(store: Store) -> None:
    with pytest.raises(ValueError, match="ask for production or canary"):
        store.get_stage_holder(MODEL, S.STAGING)


def test_aliases_point_at_versions_and_move(store: Store) -> None:
    v1, v2 = _versions(store, 2)
    store.set_alias(MODEL, "champion", v1)
    store.set_alias(MODEL, "challenger", v2)
    store.set_alias(MODEL, "champion", v2)
    assert store.get_alias(MODEL, "champion").version == "2"
    assert store.list_aliases(MODEL) == {"challenger": "2", "champion": "2"}
    with pytest.raises(NotFound, match="has no alias 'gone'"):
        store.get_alias(MODEL, "gone")
    with pytest.raises(NotFound, match="version '9' not found"):
        store.set_alias(MODEL, "champion", "9")


def test_webhooks_and_their_delivery_log(store: Store) -> None:
    first = store.add_webhook("http://127.0.0.1:9/a", ["model.stage_changed"], "HOOK_SECRET")
    second = store.add_webhook("http://127.0.0.1:9/b", ["model.stage_changed"], "OTHER")
    assert [h.webhook_id for h in store.list_webhooks().items] == [first.webhook_id,
                                                                   second.webhook_id]
    for attempt in (1, 2):
        store.record_delivery(first.webhook_id, "e1", "model.stage_changed", attempt,
                              503 if attempt == 1 else 200, "HTTP 503" if attempt == 1 else None,
                              delivered=attempt == 2)
    store.record_delivery(second.webhook_id, "e1", "model.stage_changed", 1, None, "refused",
                          delivered=False)
    newest = store.list_deliveries().items
    assert [(d.webhook_id, d.attempt) for d in newest] == [
        (second.webhook_id, 1), (first.webhook_id, 2), (first.webhook_id, 1)]
    assert [d.status_code for d in store.list_deliveries(first.webhook_id).items] == [200, 503]
    with pytest.raises(NotFound, match="webhook 999 not found"):
        store.record_delivery(999, "e", "model.stage_changed", 1, None, None, delivered=False)


def _race_in_process(url: str, version: str, to: str, barrier: Any, results: Any) -> None:
    store = open_store(url)
    try:
        barrier.wait()
        _move(store, version, S(to))
        results.put((version, "won"))
    except Conflict as exc:
        results.put((version, f"conflict: {exc}"))
    finally:
        store.close()


@pytest.mark.parametrize("to", [S.PRODUCTION, S.CANARY])
def test_two_processes_promoting_at_once_cannot_both_win(db_url: str, to: S) -> None:
    store = open_store(db_url)
    try:
        v1, v2 = _versions(store, 2)
        context = multiprocessing.get_context("spawn")
        barrier, results = context.Barrier(2), context.Queue()
        workers = [context.Process(target=_race_in_process,
                                   args=(db_url, version, to.value, barrier, results))
                   for version in (v1, v2)]
        for worker in workers:
            worker.start()
        outcomes = dict(results.get(timeout=120) for _ in workers)
        for worker in workers:
            worker.join(timeout=60)
        won = [version for version, outcome in outcomes.items() if outcome == "won"]
        assert len(won) == 1, outcomes
        [lost] = [outcome for outcome in outcomes.values() if outcome != "won"]
        assert f"{to.value} is held by version {won[0]} now, not no version" in lost
        assert _stages(store) == {v: to if v == won[0] else S.STAGING for v in (v1, v2)}
        promoted = [c for c in store.list_stage_changes(MODEL).items
                    if c.outcome is StageOutcome.PROMOTED]
        assert [c.version for c in promoted] == won
    finally:
        store.close()


def test_threads_promoting_at_once_cannot_both_win(store: Store) -> None:
    versions = _versions(store, 4)
    barrier = threading.Barrier(len(versions))
    outcomes: dict[str, str] = {}

    def promote(version: str) -> None:
        barrier.wait()
        try:
            _move(store, version, S.PRODUCTION)
            outcomes[version] = "won"
        except Conflict:
            outcomes[version] = "conflict"

    threads = [threading.Thread(target=promote, args=(v,)) for v in versions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(outcomes.values()) == ["conflict"] * 3 + ["won"]
    holder = store.get_stage_holder(MODEL, S.PRODUCTION)
    assert holder is not None and outcomes[holder.version] == "won"
