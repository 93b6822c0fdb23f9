"""Exact privacy-budget arithmetic in integer nano-ε.

Floats do not add up (9 × (1/9) = 1.0000000000000002), so every budget the
ledger or an accountant sees is an ``int`` number of nano-ε (1 ε = 10⁹ units).
Spends are rounded up and caps down, so rounding can only make us more
conservative. Splits are done in integers so the parts sum exactly to the whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation

from dpcore.errors import ParameterError

NANO = 10**9


@dataclass(frozen=True)
class BudgetSlot:
    """One planned part of a run's budget: what it pays for and its nano-ε.

    Every family's budget plan (``plan(params) -> list[BudgetSlot]``) returns these; the
    ledger charges the sum of their ``epsilon_nano`` before any noise is drawn, and a run's
    accountant is capped at exactly that sum.

    Attributes
    ----------
    phase : str
        What it pays for, in the family's words (redescriptions: ``tree``, ``extract``,
        ``rows``, ``init``, ``extend``, ``quality``; sequences: ``records``, ``lengths``,
        ``max_length``, ``prune``, ``verify``; synthesis: ``classes``, ``features``,
        ``groups``, ``marginals``).
    index : int
        Which one of the phase: a redescription trial, a sequence level, a synthesis group
        or feature; 0 when the phase has one.
    epsilon_nano : int
        Its ε in nano-ε.
    step : int
        A second index within ``index`` (a redescription trial's round); 0 otherwise.
    part : str
        The mechanism call within the phase (synthesis: ``counts``, ``sums``, ``mean``,
        ``covariance``, ``histogram``, …); ``""`` for the whole phase.
    parallel : int
        > 1: a share that each of that many disjoint parts of the records uses in full
        (parallel composition: charged once).
    """

    phase: str
    index: int
    epsilon_nano: int
    step: int = 0
    part: str = ""
    parallel: int = 1

    @property
    def role(self) -> str:
        """The redescription miners' name for :attr:`phase`."""
        return self.phase

    @property
    def trial(self) -> int:
        """The redescription miners' name for :attr:`index`."""
        return self.index


def _decimal(value, name: str) -> Decimal:
    if isinstance(value, bool):
        raise ParameterError(f"{name} must be a number, got {value!r}")
    try:
        dec = Decimal(str(value))
    except (InvalidOperation, ValueError, TypeError):
        raise ParameterError(f"{name} must be a number, got {value!r}") from None
    if not dec.is_finite():
        raise ParameterError(f"{name} must be finite, got {value!r}")
    return dec


def epsilon_to_nano(epsilon, *, name: str = "ε", round_up: bool = True) -> int:
    """Convert an ε given as float/str/Decimal to positive integer nano-ε.

    Parameters
    ----------
    epsilon : float or str or Decimal
        Privacy budget in ε units; must be finite and > 0.
    round_up : bool
        Round spends up (default) and caps down (``False``).

    Raises
    ------
    ParameterError
        If ε is not a finite number > 0 or rounds to 0 nano-ε.
    """
    dec = _decimal(epsilon, name)
    if dec <= 0:
        raise ParameterError(f"{name} must be > 0, got {epsilon!r}")
    nano = int((dec * NANO).to_integral_value(ROUND_CEILING if round_up else ROUND_FLOOR))
    if nano <= 0:
        raise ParameterError(f"{name} = {epsilon!r} is below the smallest unit 1e-9")
    return nano


def nano_to_epsilon(nano: int) -> float:
    """Integer nano-ε to float ε (for noise scales and display only)."""
    return nano / NANO


def fraction_to_nano(fraction, *, name: str) -> int:
    """A fraction in [0, 1] (such as ω) as an exact integer in units of 1e-9."""
    dec = _decimal(fraction, name)
    if dec < 0 or dec > 1:
        raise ParameterError(f"{name} must lie in [0, 1], got {fraction!r}")
    return int((dec * NANO).to_integral_value(ROUND_FLOOR))


def split_evenly(total: int, parts: int) -> list[int]:
    """Split ``total`` units into ``parts`` integers that differ by ≤ 1 and sum to ``total``."""
    if parts <= 0:
        raise ParameterError(f"cannot split a budget into {parts} parts")
    base, extra = divmod(int(total), parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def split_fraction(total: int, fraction_nano: int) -> tuple[int, int]:
    """Split ``total`` into (fraction·total, rest) exactly; the rest is ``total − first``."""
    first = (int(total) * int(fraction_nano)) // NANO
    return first, int(total) - first
