"""dpcore.privacy.units: exact nano-ε arithmetic (spends round up, caps down, splits sum)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.errors import ParameterError
from dpcore.privacy.units import (
    NANO,
    epsilon_to_nano,
    fraction_to_nano,
    nano_to_epsilon,
    split_evenly,
    split_fraction,
)


def test_spends_round_up_and_caps_round_down():
    assert epsilon_to_nano("1e-9") == 1
    assert epsilon_to_nano("1.0000000001") == NANO + 1
    assert epsilon_to_nano("1.0000000001", round_up=False) == NANO
    assert epsilon_to_nano(Decimal("0.1")) == 10**8 and epsilon_to_nano(0.1) == 10**8
    assert nano_to_epsilon(epsilon_to_nano(2.5)) == 2.5


@pytest.mark.parametrize("bad", [0, -1, "abc", float("nan"), float("inf"), True, None, "1e-10"])
def test_bad_epsilon_is_refused_with_its_name(bad):
    with pytest.raises(ParameterError, match="cap"):
        epsilon_to_nano(bad, name="cap", round_up=False)


def test_fraction_in_unit_interval_only():
    assert fraction_to_nano("0.5", name="ω") == NANO // 2
    assert fraction_to_nano(1, name="ω") == NANO and fraction_to_nano(0, name="ω") == 0
    for bad in (-0.1, 1.01, "x"):
        with pytest.raises(ParameterError, match="ω"):
            fraction_to_nano(bad, name="ω")


@settings(deadline=None)  # timing is not under test (a loaded CI machine)
@given(st.integers(0, 10**15), st.integers(1, 1000))
def test_split_evenly_sums_and_differs_by_at_most_one(total, parts):
    pieces = split_evenly(total, parts)
    assert len(pieces) == parts and sum(pieces) == total
    assert max(pieces) - min(pieces) <= 1 and pieces == sorted(pieces, reverse=True)


def test_split_evenly_refuses_no_parts():
    with pytest.raises(ParameterError, match="0 parts"):
        split_evenly(10, 0)


@settings(deadline=None)  # timing is not under test (a loaded CI machine)
@given(st.integers(0, 10**15), st.integers(0, NANO))
def test_split_fraction_is_exact(total, fraction):
    first, rest = split_fraction(total, fraction)
    assert first + rest == total and 0 <= first <= total
    assert first == (total * fraction) // NANO


def test_nine_ninths_add_up_exactly():
    assert sum(split_evenly(epsilon_to_nano(1), 9)) == NANO


def test_every_family_plans_with_the_one_budget_slot_type():
    from dpcore.privacy.units import BudgetSlot
    from dpcore.registry import ALGORITHM_SPECS

    for spec in ALGORITHM_SPECS.values():
        params = spec.resolve("params_type")(**{**spec.defaults(), "algorithm": spec.key,
                                                 **({"left_query": "[A]", "right_query": "[B]"}
                                                    if "left_query" in spec.defaults() else {})})
        slots = spec.resolve("plan")(params)
        assert slots and all(type(s) is BudgetSlot for s in slots), spec.key
    slot = BudgetSlot("tree", 3, 10, step=2)
    assert (slot.role, slot.trial, slot.step, slot.part, slot.parallel) == ("tree", 3, 2, "", 1)
