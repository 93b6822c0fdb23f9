"""The budget meter: total ε, spent, remaining, and the cost of the configured run.

Read from the ledger on every rerun (never from session state): a run charged in
another tab or by the command line shows up at the next interaction. The cost is
:func:`dpcore.runs.run_cost` of the run configured on the page that mines the current
dataset's kind (:func:`configured_params`): the Mine page for a two-view dataset, the
Sequences page for a sequence dataset, the Synthesis page for a labelled table.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from dpcore.errors import DpcoreError, ParameterError
from dpcore.privacy.ledger import BudgetStatus, DatasetRecord, Ledger
from dpcore.privacy.units import nano_to_epsilon
from dpcore.registry import KIND_SEQUENCES, KIND_TABLE
from dpcore.runs import run_cost

from ..redescriptions.params_form import params_from_state
from ..sequences.sequence_form import read_form
from ..synthesis.synthesis_form import params_from_state as synthesis_params_from_state
from .family_pages import page_for

__all__ = ["fmt_eps", "fmt_meter", "MeterReading", "configured_params", "read_meter",
           "render_budget_meter"]

METRIC_LABELS = ("Total ε", "Spent ε", "Remaining ε", "This run ε")


def fmt_eps(value: float) -> str:
    """How the meter prints an ε (6 significant digits)."""
    return f"{value:.6g}"


def fmt_meter(value: float) -> str:
    """An ε as the meter's big figures show it: at most 4 significant digits (5 characters
    or so fit a half-width sidebar column; ``fmt_eps``'s six digits were cut off), whole
    numbers from 10,000 up. The exact figure is in the metric's help."""
    short = f"{value:.4g}"
    return f"{value:,.0f}" if "e+" in short else short


def _metric(container, label: str, value: float | None) -> None:
    if value is None:
        container.metric(label, "—")
    else:
        container.metric(label, fmt_meter(value), help=f"ε = {fmt_eps(value)} exactly")


@dataclass(frozen=True)
class MeterReading:
    """One reading of the meter: the ledger's budget and the configured run's cost.

    ``cost_nano`` is None (and ``problem`` says why) when the configured
    parameters are invalid.
    """

    status: BudgetStatus
    cost_nano: int | None
    problem: str | None

    @property
    def fits(self) -> bool:
        """Whether the configured run fits in what remains, as of this reading."""
        return self.cost_nano is not None and self.status.fits(self.cost_nano)


def configured_params(record: DatasetRecord | None = None):
    """The run configured on the page that mines ``record``'s kind (not validated; the Mine
    page's without a record). Raises ParameterError when that page's form refuses it."""
    kind = record.kind if record is not None else None
    if kind == KIND_SEQUENCES:
        reading = read_form(st.session_state)
        if reading.params is None:
            raise ParameterError("; ".join(reading.messages))
        return reading.params
    if kind == KIND_TABLE:
        return synthesis_params_from_state(record)
    return params_from_state()


def read_meter(ledger: Ledger, dataset: str, record: DatasetRecord | None = None
               ) -> MeterReading:
    """Read the budget from the ledger and price the run configured for ``record``'s kind."""
    status = ledger.budget(dataset)
    try:
        cost, problem = run_cost(configured_params(record).validate()), None
    except (DpcoreError, TypeError, ValueError) as exc:
        cost, problem = None, str(exc)
    return MeterReading(status, cost, problem)


def render_budget_meter(ledger: Ledger, record: DatasetRecord | None,
                        account: str | None = None) -> MeterReading | None:
    """Draw the meter in the sidebar; return the reading (None without a dataset).

    With a signed-in ``account`` it also shows that account's part: what it spent and what
    it may still spend (its share of the cap, if the owner gave it one), beside the
    dataset's.
    """
    if record is None:
        return None
    reading = read_meter(ledger, record.name, record)
    status = reading.status
    with st.sidebar:
        st.markdown(f"**Privacy budget of `{record.name}`**")
        if account is not None:
            mine = ledger.quota_status(record.name, account)
            share = ("no share set: the dataset's cap applies" if mine.quota is None
                     else f"share ε = {fmt_eps(mine.quota)}")
            st.markdown(f"Yours: ε = {fmt_eps(mine.spent)} spent, "
                        f"ε = {fmt_eps(mine.remaining)} left ({share})  \n"
                        f"The dataset's: ε = {fmt_eps(status.spent)} spent, "
                        f"ε = {fmt_eps(status.remaining)} left of ε = {fmt_eps(status.cap)}")
        c1, c2 = st.columns(2)
        _metric(c1, METRIC_LABELS[0], status.cap)
        _metric(c2, METRIC_LABELS[1], status.spent)
        c1, c2 = st.columns(2)
        _metric(c1, METRIC_LABELS[2], status.remaining)
        _metric(c2, METRIC_LABELS[3], None if reading.cost_nano is None
                else nano_to_epsilon(reading.cost_nano))
        share = status.spent_nano / status.cap_nano if status.cap_nano > 0 else 1.0
        st.progress(min(1.0, max(0.0, share)), text=f"{share:.0%} of the budget spent")
        if reading.problem is not None:
            st.warning(f"The run configured on the {page_for(record) or 'Mine'} page is "
                       f"invalid: {reading.problem}")
        elif not reading.fits:
            st.warning(f"The configured run (ε = {fmt_eps(nano_to_epsilon(reading.cost_nano))}) "
                       f"does not fit: only ε = {fmt_eps(status.remaining)} remains. The "
                       "ledger will refuse it.")
        st.caption("Read from the ledger on every page load. Exploring, pruning and "
                   "exporting cost 0 ε; only mining runs spend budget, never refunded.")
    return reading
