"""The run query language: parsing is pure, and every mistake names its position."""

from __future__ import annotations

import pytest

from trainforge.errors import QueryError
from trainforge.storage.query import AllOf, AnyOf, Comparison, Field, SortKey, comparisons
from trainforge.tracking import parse_filter, parse_sort

AUC = Comparison(Field("metrics", "auc"), ">", 0.9)
FAILED = Comparison(Field("attribute", "status"), "=", "failed")
RISK = Comparison(Field("tags", "team"), "=", "risk")


def test_the_issue_example_parses():
    parsed = parse_filter("metrics.test_auc > 0.9 and params.training.optimizer.lr < 1e-3")
    assert parsed == AllOf((
        Comparison(Field("metrics", "test_auc"), ">", 0.9),
        Comparison(Field("params", "training.optimizer.lr"), "<", 0.001),
    ))
    assert comparisons(parsed)[1].field.path == ("training", "optimizer", "lr")


@pytest.mark.parametrize(("text", "expected"), [
    ("metrics.auc > 0.9 or status = 'failed'", AnyOf((AUC, FAILED))),
    # "and" binds tighter than "or"
    ("metrics.auc > 0.9 or status = 'failed' and tags.team = 'risk'",
     AnyOf((AUC, AllOf((FAILED, RISK))))),
    ("(metrics.auc > 0.9 or status = 'failed') and tags.team = 'risk'",
     AllOf((AnyOf((AUC, FAILED)), RISK))),
    ("((metrics.auc > 0.9))", AUC),
    ("metrics.auc > 0.9 OR (status='failed')AND(tags.team='risk')",
     AnyOf((AUC, AllOf((FAILED, RISK))))),
    ("metrics.auc > 0.9 or status = 'failed' or tags.team = 'risk'", AnyOf((AUC, FAILED, RISK))),
])
def test_or_and_parentheses(text, expected):
    assert parse_filter(text) == expected


@pytest.mark.parametrize(("text", "value"), [
    ("tags.gates.passed = false", False), ("tags.gates.passed != TRUE", True),
])
def test_booleans(text, value):
    [parsed] = comparisons(parse_filter(text))
    assert parsed.field == Field("tags", "gates.passed") and parsed.value is value


@pytest.mark.parametrize(("text", "expected"), [
    ("status='completed'", Comparison(Field("attribute", "status"), "=", "completed")),
    ('experiment != "fraud"', Comparison(Field("attribute", "experiment"), "!=", "fraud")),
    ("tags.team = 'risk'", Comparison(Field("tags", "team"), "=", "risk")),
    ("metrics.val/loss<=-.5", Comparison(Field("metrics", "val/loss"), "<=", -0.5)),
    ("metrics.x >= +2E3", Comparison(Field("metrics", "x"), ">=", 2000.0)),
    ("params.n AND params.m", None),
])
def test_operators_values_and_names(text, expected):
    if expected is None:
        with pytest.raises(QueryError):
            parse_filter(text)
    else:
        assert parse_filter(text) == expected


def test_blank_filter_and_sort_mean_none():
    assert parse_filter(None) is parse_filter("  ") is None
    assert comparisons(None) == ()
    assert parse_sort(None) == parse_sort("") == ()


def test_sort_keys_with_direction():
    assert parse_sort("-metrics.test_auc, params.lr,started_at") == (
        SortKey(Field("metrics", "test_auc"), True),
        SortKey(Field("params", "lr"), False),
        SortKey(Field("attribute", "started_at"), False),
    )


@pytest.mark.parametrize(("text", "position", "message"), [
    ("metrics.auc >> 0.9", 13, "expected a number, a quoted string, true or false, got '>'"),
    ("metrics.auc 0.9", 12, "expected an operator (= != < <= > >=), got '0.9'"),
    ("metrics.auc > 0.9 nor status = 'failed'", 18,
     "expected 'and', 'or' or the end of the filter, got 'nor'"),
    ("metrics.auc > 0.9 and", 21, "expected a field (metrics.X"),
    ("metrics.auc > 0.9 or", 20, "expected a field (metrics.X"),
    ("(metrics.auc > 0.9 or status = 'failed'", 39, "expected 'and', 'or' or ')', got the end"),
    ("(metrics.auc > 0.9) )", 20, "expected 'and', 'or' or the end of the filter, got ')'"),
    ("()", 1, "expected a field (metrics.X"),
    ("tags.gates.passed < true", 18, "true and false compare with = or != only, got '<'"),
    ("metrics.auc = true", 14, "metrics.auc is a number; expected a number, got true"),
    ("status = false", 9, "status is text; expected a quoted string"),
    ("tags.ok = truth", 10, "expected a number, a quoted string, true or false, got 'truth'"),
    ("metrics.auc > 'high'", 14, "metrics.auc is a number; expected a number, got a string"),
    ("status = 'done'", 9,
     "expected a status (running, completed, failed, crashed, preempted, pruned)"),
    ("status = 1", 9, "status is text; expected a quoted string"),
    ("owner = 'ana'", 0, "unknown field 'owner'"),
    ("metric.auc > 1", 0, "unknown field 'metric.auc'; expected it to start with metrics."),
    ("metrics. > 1", 0, "expected a name after 'metrics.'"),
    ("tags.team = 'risk", 12, "unterminated string: expected a closing '"),
    ("metrics.auc > 0.9.1", 14, "expected a number, a quoted string, true or false"),
])
def test_filter_errors_name_the_position_and_the_expectation(text, position, message):
    with pytest.raises(QueryError) as raised:
        parse_filter(text)
    assert raised.value.position == position
    assert message in str(raised.value)
    assert str(raised.value).startswith(f"{text!r} at position {position}: ")


@pytest.mark.parametrize(("text", "position", "message"), [
    ("-experiment", 1, "cannot sort by 'experiment'"),
    ("metrics.auc desc", 12, "expected ',' or the end of the sort keys"),
    ("--metrics.auc", 1, "expected a sort key"),
])
def test_sort_errors_name_the_position(text, position, message):
    with pytest.raises(QueryError) as raised:
        parse_sort(text)
    assert raised.value.position == position and message in str(raised.value)
