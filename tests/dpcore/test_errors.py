"""dpcore.errors: every typed error says where and what, in words a user can act on."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.errors import (
    BudgetExceededError,
    DataError,
    DpcoreError,
    OwnerLoginThrottled,
    ParameterError,
)


def test_data_error_names_file_column_and_row():
    err = DataError("not a number", file="left.csv", column="age", row=7)
    assert str(err) == "file 'left.csv', column 'age', row 7: not a number"
    assert (err.file, err.column, err.row, err.message) == ("left.csv", "age", 7, "not a number")


def test_data_error_line_replaces_row_and_names_the_file():
    err = DataError("bad value", file="s.csv", column="x", row=3, line=4)
    assert str(err) == "line 4 of file 's.csv', column 'x': bad value"
    assert str(DataError("bad", line=2)) == "line 2: bad"
    assert str(DataError("plain")) == "plain"


def test_errors_are_value_errors_where_the_input_is_bad():
    assert issubclass(DataError, ValueError) and issubclass(ParameterError, ValueError)
    assert not issubclass(BudgetExceededError, ValueError)
    for cls in (DataError, ParameterError, BudgetExceededError, OwnerLoginThrottled):
        assert issubclass(cls, DpcoreError)


def test_budget_exceeded_says_requested_remaining_and_nothing_charged():
    err = BudgetExceededError(0.5, 0.25, what="AltMCMC run")
    assert (err.requested, err.remaining) == (0.5, 0.25)
    assert "the AltMCMC run needs ε = 0.5" in str(err)
    assert "only ε = 0.25 remains" in str(err) and "nothing was charged" in str(err)


@pytest.mark.parametrize("retry, words", [
    (0.2, "1 s"), (8.0, "8 s"), (8.01, "9 s"), (60, "1 min"), (125, "2 min 5 s")])
def test_owner_login_throttled_wait_in_words(retry, words):
    err = OwnerLoginThrottled(retry, failures=5)
    assert err.wait == words and err.failures == 5
    assert f"wait {words} " in str(err) and "(5 in a row)" in str(err)


@settings(deadline=None)  # timing is not under test (a loaded CI machine)
@given(st.floats(min_value=0.0, max_value=1e5, allow_nan=False))
def test_owner_login_wait_never_rounds_down(retry):
    err = OwnerLoginThrottled(retry, failures=1)
    parts = err.wait.split()
    seconds = 0
    for value, unit in zip(parts[::2], parts[1::2], strict=True):
        seconds += int(value) * (60 if unit == "min" else 1)
    assert seconds >= max(1, retry) and seconds - retry < 1 + 1e-9
