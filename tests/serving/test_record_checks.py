"""Record checks against an input contract and flags against a training profile, as pure
functions of the request body."""

from __future__ import annotations

import pytest

from trainforge.serving import RecordChecker
from trainforge.validate import SchemaContract

CONTRACT = SchemaContract.model_validate({
    "columns": {
        "amount": {"type": "float", "min": 0},
        "hour": {"type": "int"},
        "country": {"type": "string", "nullable": True},
        "card_present": {"type": "bool"},
        "ts": {"type": "datetime"},
        "note": {"type": "string"},
    },
    "allow_extra_columns": False,
})
PROFILE = {"columns": {"amount": {"min": 1.0, "max": 100.0},
                       "country": {"categories": ["US", "CA"]}}}
CHECKER = RecordChecker.build(CONTRACT, ["amount", "hour", "country", "card_present"], PROFILE,
                             {"amount": (-1e6, 1e6), "hour": (-1e6, 1e6)})
GOOD = {"amount": 10, "hour": 3, "country": "US", "card_present": True,
        "ts": "2026-01-02T03:04:05Z"}


def test_a_good_record_has_no_problems_and_optional_columns_may_be_absent():
    assert CHECKER.problems([GOOD, {**GOOD, "amount": 2.5, "country": None}]) == []


def test_an_integral_float_is_an_integer_as_json_schema_says():
    assert CHECKER.problems([{**GOOD, "hour": 3.0}, {**GOOD, "hour": -0.0}]) == []


@pytest.mark.parametrize(("record", "field", "error"), [
    ({k: v for k, v in GOOD.items() if k != "hour"}, "hour", "missing"),
    ({**GOOD, "hour": 3.5}, "hour", "expected an integer, got a number 3.5"),
    ({**GOOD, "hour": float("inf")}, "hour", "expected an integer, got a number inf"),
    ({**GOOD, "hour": True}, "hour", "expected an integer, got a boolean"),
    ({**GOOD, "amount": "10"}, "amount", "expected a finite number, got text '10'"),
    ({**GOOD, "amount": float("nan")}, "amount", "expected a finite number, got a number nan"),
    ({**GOOD, "card_present": 1}, "card_present", "expected true or false"),
    ({**GOOD, "ts": "yesterday"}, "ts", "expected an ISO 8601 date-time string"),
    ({**GOOD, "amount": None}, "amount", "is null; the contract says not null"),
    ({**GOOD, "country": ["US"]}, "country", "expected text, got a list"),
    ({**GOOD, "extra": 1}, "extra", "not in the input contract"),
])
def test_each_broken_field_is_named_with_its_record(record, field, error):
    problems = CHECKER.problems([GOOD, record])
    assert problems == [{"record": 1, "field": field, "error": problems[0]["error"]}]
    assert problems[0]["error"].startswith(error)


def test_a_body_that_is_not_a_list_of_objects_is_one_problem():
    assert CHECKER.problems({"amount": 1})[0]["error"] == ("expected a JSON list of records, "
                                                           "got an object")
    assert CHECKER.problems([])[0]["error"] == "expected at least one record, got an empty list"
    assert CHECKER.problems([GOOD, "x"]) == [{"record": 1, "field": None,
                                              "error": "expected an object, got text"}]


def test_problems_stop_at_twenty():
    assert len(CHECKER.problems([{}] * 50)) == 20


def test_values_outside_the_profile_are_flagged_not_refused():
    records = [GOOD, {**GOOD, "amount": 500.0, "country": "ZZ"}, {**GOOD, "country": None}]
    assert CHECKER.problems(records) == []
    assert CHECKER.flags(records) == [
        [],
        [{"field": "amount", "flag": "out_of_range", "value": 500.0, "expected": [1.0, 100.0]},
         {"field": "country", "flag": "unseen_category", "value": "ZZ"}],
        [],
    ]


@pytest.mark.parametrize(("value", "shown"), [
    (1e7, "10000000.0"),
    (-2e6, "-2000000.0"),
    (10**400, "an integer of 401 digits"),
])
def test_a_number_beyond_the_encoders_limits_names_them_and_the_contracts_range(value, shown):
    problems = CHECKER.problems([GOOD, {**GOOD, "amount": value}])
    assert problems == [{"record": 1, "field": "amount", "error": (
        f"{shown} is beyond what the model's features can hold: expected a number from "
        f"-1000000.0 to 1000000.0 (the input contract expects at least 0; a value outside that "
        f"but within these limits is scored and flagged)")}]


def test_a_number_at_the_limits_is_accepted_and_a_column_without_contract_bounds_says_so():
    assert CHECKER.problems([{**GOOD, "amount": 1e6, "hour": -1_000_000}]) == []
    error = CHECKER.problems([{**GOOD, "hour": 10**7}])[0]["error"]
    assert error == ("10000000 is beyond what the model's features can hold: expected a number "
                     "from -1000000.0 to 1000000.0")
