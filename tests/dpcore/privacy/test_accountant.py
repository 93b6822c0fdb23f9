"""dpcore.privacy.accountant: a run never spends past its charge, and every call is kept."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.errors import BudgetExceededError, ParameterError
from dpcore.privacy.accountant import MechanismCall, PrivacyAccountant


def test_spend_records_the_call_and_returns_float_epsilon():
    acc = PrivacyAccountant(cap_nano=10**9)
    assert acc.spend("laplace", "support", 25 * 10**7, sensitivity=1.0, parallel=3) == 0.25
    assert acc.spent_nano == 25 * 10**7 and acc.remaining_nano == 75 * 10**7
    assert acc.calls == [MechanismCall("laplace", "support", 25 * 10**7, 1.0, 3)]
    assert acc.calls[0].epsilon == 0.25
    assert acc.to_records() == [{"mechanism": "laplace", "label": "support",
                                 "epsilon_nano": 25 * 10**7, "sensitivity": 1.0,
                                 "parallel": 3}]


def test_overspend_is_refused_and_records_nothing():
    acc = PrivacyAccountant(cap_nano=100)
    acc.spend("m", "a", 60, 1.0)
    with pytest.raises(BudgetExceededError, match="the b needs"):
        acc.spend("m", "b", 41, 1.0)
    assert acc.spent_nano == 60 and len(acc.calls) == 1
    acc.spend("m", "c", 40, 1.0)  # exactly the rest is allowed
    assert acc.remaining_nano == 0


@pytest.mark.parametrize("eps, sens, match", [(0, 1.0, "ε > 0"), (-5, 1.0, "ε > 0"),
                                              (10, 0.0, "sensitivity"),
                                              (10, float("nan"), "sensitivity")])
def test_bad_calls_name_the_mechanism(eps, sens, match):
    acc = PrivacyAccountant(cap_nano=100)
    with pytest.raises(ParameterError, match=match):
        acc.spend("m", "split", eps, sens)
    assert acc.calls == []


@pytest.mark.parametrize("cap", [0, -1])
def test_cap_must_be_positive(cap):
    with pytest.raises(ParameterError, match="cap > 0"):
        PrivacyAccountant(cap_nano=cap)


@settings(deadline=None)  # timing is not under test (a loaded CI machine)
@given(st.integers(1, 10**12), st.lists(st.integers(1, 10**11), max_size=30))
def test_spent_never_exceeds_cap(cap, spends):
    acc = PrivacyAccountant(cap_nano=cap)
    for s in spends:
        try:
            acc.spend("m", "x", s, 1.0)
        except BudgetExceededError:
            pass
        assert 0 <= acc.spent_nano <= cap
        assert acc.spent_nano + acc.remaining_nano == cap


def test_the_run_budget_returns_the_unspent_part_only_when_refundable():
    from dpcore.privacy.accountant import RunBudget

    acc = PrivacyAccountant(1000)
    acc.spend("laplace", "a", 300, 1.0)
    kept = acc.budget(refundable=False)
    returned = acc.budget(refundable=True)
    assert (kept.charged_nano, kept.spent_nano, kept.refunded_nano) == (1000, 300, 0)
    assert kept.unaccounted_nano == 700
    assert returned.refunded_nano == 700 and returned.unaccounted_nano == 0
    assert RunBudget.from_dict(returned.to_dict()) == returned
    assert RunBudget.from_dict(None) is None
    with pytest.raises(ParameterError, match="cannot spend"):
        RunBudget(100, 60, 50)
