"""In-run privacy accountant: every mechanism call reports its (ε, Δ) here.

The ledger charges a whole run before it starts; the accountant then makes sure
the run's mechanisms never spend more than that charge, and keeps the list of
calls so tests (and the stored result) can prove the composition.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from dpcore.errors import BudgetExceededError, ParameterError
from dpcore.privacy.units import nano_to_epsilon


@dataclass(frozen=True)
class MechanismCall:
    """One mechanism invocation.

    Attributes
    ----------
    mechanism : str
        ``"laplace"``, ``"discrete_laplace"``, ``"exponential"`` or ``"mcmc"``.
    label : str
        What was released, e.g. ``"trial 3 / tree L level 2"``.
    epsilon_nano : int
        ε charged, in nano-ε.
    sensitivity : float
        Global sensitivity Δ the noise was calibrated to.
    parallel : int
        Number of disjoint parts the same ε covered (parallel composition), 1 if none.
    """

    mechanism: str
    label: str
    epsilon_nano: int
    sensitivity: float
    parallel: int = 1

    @property
    def epsilon(self) -> float:
        return nano_to_epsilon(self.epsilon_nano)


@dataclass(frozen=True)
class RunBudget:
    """What a run was charged, what its mechanisms spent and what it returned (nano-ε).

    ``refunded_nano`` is ``charged_nano − spent_nano`` for a run whose spending stops on
    released values only (a privacy filter on the fixed cap of its charge, docs/PRIVACY.md
    "Charged = spent: refunds"), else 0. ``unaccounted_nano`` is the part neither spent
    nor returned (0 when charged = spent + returned).
    """

    charged_nano: int
    spent_nano: int
    refunded_nano: int

    def __post_init__(self):
        if not (0 <= self.spent_nano and 0 <= self.refunded_nano
                and self.spent_nano + self.refunded_nano <= self.charged_nano):
            raise ParameterError(f"a run charged {self.charged_nano} nano-ε cannot spend "
                                 f"{self.spent_nano} and return {self.refunded_nano}")

    @property
    def unaccounted_nano(self) -> int:
        return self.charged_nano - self.spent_nano - self.refunded_nano

    @property
    def charged(self) -> float:
        return nano_to_epsilon(self.charged_nano)

    @property
    def spent(self) -> float:
        return nano_to_epsilon(self.spent_nano)

    @property
    def refunded(self) -> float:
        return nano_to_epsilon(self.refunded_nano)

    def to_dict(self) -> dict[str, int]:
        return {"charged_nano": int(self.charged_nano), "spent_nano": int(self.spent_nano),
                "refunded_nano": int(self.refunded_nano)}

    @classmethod
    def from_dict(cls, raw: Any) -> RunBudget | None:
        """The budget block of a stored result (None when it has none: stored before)."""
        if not isinstance(raw, dict):
            return None
        return cls(int(raw["charged_nano"]), int(raw["spent_nano"]), int(raw["refunded_nano"]))


@dataclass
class PrivacyAccountant:
    """Sequential-composition accountant with an integer cap in nano-ε.

    Parameters
    ----------
    cap_nano : int
        The most this run may spend, in nano-ε (what the ledger charged).
    """

    cap_nano: int
    calls: list[MechanismCall] = field(default_factory=list)

    def __post_init__(self):
        if int(self.cap_nano) <= 0:
            raise ParameterError("an accountant needs a cap > 0")

    @property
    def spent_nano(self) -> int:
        return sum(c.epsilon_nano for c in self.calls)

    @property
    def remaining_nano(self) -> int:
        return int(self.cap_nano) - self.spent_nano

    def spend(self, mechanism: str, label: str, epsilon_nano: int,
              sensitivity: float, parallel: int = 1) -> float:
        """Record a mechanism call before its noise is drawn; return its ε as float.

        Raises
        ------
        BudgetExceededError
            If the call would exceed the cap; nothing is recorded.
        ParameterError
            If ε ≤ 0 or Δ ≤ 0.
        """
        epsilon_nano = int(epsilon_nano)
        if epsilon_nano <= 0:
            raise ParameterError(f"mechanism {label!r} needs ε > 0")
        if not sensitivity > 0:
            raise ParameterError(f"mechanism {label!r} needs sensitivity > 0")
        if epsilon_nano > self.remaining_nano:
            raise BudgetExceededError(nano_to_epsilon(epsilon_nano),
                                      nano_to_epsilon(self.remaining_nano), what=label)
        self.calls.append(MechanismCall(mechanism, label, epsilon_nano,
                                        float(sensitivity), int(parallel)))
        return nano_to_epsilon(epsilon_nano)

    def to_records(self) -> list[dict]:
        return [asdict(c) for c in self.calls]

    def budget(self, *, refundable: bool) -> RunBudget:
        """Charged (the cap), spent, and returned: the unspent rest when ``refundable``.

        ``refundable`` must only be true when every decision of how much to spend was a
        function of public parameters and of this run's earlier DP outputs (the caller's
        algorithm declares it, next to its stopping rules): then the run's mechanisms form a
        privacy filter with the cap as its bound, and what they did not spend is not lost.
        """
        spent = self.spent_nano
        return RunBudget(int(self.cap_nano), spent,
                         int(self.cap_nano) - spent if refundable else 0)
