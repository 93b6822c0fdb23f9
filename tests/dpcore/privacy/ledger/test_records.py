"""dpcore.privacy.ledger.records: the ledger's frozen records and their ε views."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.privacy.ledger.records import (
    AUDIENCES,
    RUN_STATUSES,
    BudgetStatus,
    ChargeRecord,
    DatasetRecord,
    RunRecord,
)
from dpcore.privacy.units import NANO


def test_records_are_frozen():
    status = BudgetStatus(cap_nano=NANO, spent_nano=0, remaining_nano=NANO)
    with pytest.raises(dataclasses.FrozenInstanceError):
        status.spent_nano = 5


def test_budget_status_in_epsilon():
    status = BudgetStatus(cap_nano=2 * NANO, spent_nano=NANO // 4, remaining_nano=7 * NANO // 4)
    assert (status.cap, status.spent, status.remaining) == (2.0, 0.25, 1.75)


@settings(deadline=None)  # timing is not under test (a loaded CI machine)
@given(st.integers(0, 10**12), st.integers(-10**12, 10**12))
def test_fits_only_a_positive_spend_within_what_remains(remaining, spend):
    status = BudgetStatus(cap_nano=remaining, spent_nano=0, remaining_nano=remaining)
    assert status.fits(spend) == (0 < spend <= remaining)


def test_charge_and_run_epsilon():
    charge = ChargeRecord(1, "r", "d", "algo", 3 * NANO // 2, (NANO, NANO // 2), {}, "a", "t")
    assert charge.epsilon == 1.5 and charge.replayed is False
    run = RunRecord("r", "d", "algo", "charged", NANO // 10, {}, None, "t", None)
    assert run.epsilon == 0.1 and run.audience == "everyone"


def test_sandbox_flag_and_the_vocabularies():
    base = dict(name="d", schema=None, source_path=None, public_demo=False, confirmed=True,
                created_at="t")
    assert not DatasetRecord(**base, sandbox_of=None).is_sandbox
    assert DatasetRecord(**base, sandbox_of="parent").is_sandbox
    assert RUN_STATUSES == ("charged", "done", "failed")
    assert AUDIENCES == ("everyone", "owner")
