"""How strongly Serenade's draws can prefer good candidates: a bound from public values, 0 ε.

Serenade chooses its initial literal pairs and its extensions with the exponential mechanism:
candidate c is drawn with probability ∝ exp(ε_draw · f(c) / (2·Δf)), and the quality f lies
in [0, 1] (:mod:`dpcore.redescriptions.serenade.quality`). So no candidate can be favoured
over any other by more than the factor e^(ε_draw / (2·Δf)), whatever the data. When a draw
chooses among very many candidates — a wide dataset, or numeric attributes with many literals
(560 per attribute on a 32-threshold grid) — that factor cannot lift a few good candidates
over the mass of poor ones and the draws are close to uniform. Measured on the 5,000-row
clinic sample at ε = 1 (owner-side, true scores): the mean true f of an initial-pair draw is
0.059 against 0.035 for a uniform draw, with the best pair at 0.79; on a 2,500 × 250 shape
0.017 against 0.012 (docs/results.md, "Serenade on wide data").

This module states that limit before a run, from the schema's public grid and the run's
parameters only (post-processing of public values, 0 ε):

* Δf ≥ ½·tanh(s/2) for every row count (:func:`min_quality_sensitivity`), so the factor of
  a draw of ε_draw is at most e^(ε_draw / tanh(s/2)) — an upper bound that holds for the
  noisy N̂ the run will draw;
* the candidates of an initial-pair draw are the pairs of one left and one right literal
  (:mod:`dpcore.redescriptions.serenade.literals`, counted from the public grid); those of an
  extension draw are, per redescription, ∧ and ∨ with every literal of either side, and "no
  change" (the query-length rules forbid some: the count is an upper bound);
* for a set G of the best g candidates, P(draw ∈ G) ≤ g·F / (g·F + C − g) with F the factor
  and C the number of candidates: the bound on the share of draws that land among the best
  1 % (:meth:`DrawStrength.top_share_bound`).

Strict mode only: faithful mode's literals come from the data (not public).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpcore.data.schema import BOOLEAN, CATEGORICAL, Schema
from dpcore.redescriptions.params import SerenadeParams, plan_budget
from dpcore.registry import SERENADE_ES, STRICT

__all__ = ["DrawStrength", "SerenadeSelection", "min_quality_sensitivity", "literal_counts",
           "serenade_selection", "TOP_SHARE", "NEAR_RANDOM_BELOW"]

#: The "best candidates" of the statement: the top 1 % of a draw's candidates.
TOP_SHARE = 0.01
#: A draw is "close to random" when it lands among the best 1 % with probability below this.
NEAR_RANDOM_BELOW = 0.5


def min_quality_sensitivity(steepness: float) -> float:
    """A lower bound on Serenade's Δf over every row count: ½·tanh(s/2).

    Why: for an integer u with x0 − 1 ≤ u ≤ x0 (one exists in the range Δf maximises over), the
    move (u, u) → (u + 1, u + 1) changes f = J·σ by σ(u + 1) − σ(u) (J = 1 at both ends; at
    u = 0, f(0, 0) = 0 and the change is σ(1) ≥ σ(1) − σ(0)). The increment σ(x + 1) − σ(x) is
    symmetric about x = x0 − ½ and falls away from it, so on [x0 − 1, x0] it is at least its
    value at x0, σ(x0 + 1) − σ(x0) = ½·tanh(s/2).
    """
    return 0.5 * math.tanh(float(steepness) / 2.0)


def literal_counts(schema: Schema) -> tuple[int, int]:
    """Number of Serenade literals of each view on the schema's public grid (strict mode)."""
    counts = []
    for view in (0, 1):
        n = 0
        for at in schema.view_attributes(view):
            if at.type == BOOLEAN:
                n += 1
            elif at.type == CATEGORICAL:
                n += len(at.categories)
            else:
                codes = len(schema.split_grid(at)) + 1
                n += codes * (codes + 1) // 2 - 1
        counts.append(n)
    return counts[0], counts[1]


@dataclass(frozen=True)
class DrawStrength:
    """One kind of exponential-mechanism draw of a Serenade run, bounded from public values.

    Attributes
    ----------
    what : str
        ``"initial pair"`` or ``"extension"``.
    epsilon : float
        ε of one draw (the smallest slot of its role, as the miner scores every draw).
    candidates : int
        Candidates of one draw (upper bound for extensions).
    max_log_odds : float
        ε / tanh(s/2): the log of the most the draw can favour one candidate over another.
    """

    what: str
    epsilon: float
    candidates: int
    max_log_odds: float

    def top_share_bound(self, share: float = TOP_SHARE) -> float:
        """Upper bound on P(the draw lands among the best ``share`` of its candidates)."""
        g = max(1, math.floor(share * self.candidates))
        if g >= self.candidates:
            return 1.0
        log_num = math.log(g) + self.max_log_odds
        log_den = math.log(self.candidates - g)
        return 1.0 / (1.0 + math.exp(log_den - log_num))

    def epsilon_scale_for(self, target: float = NEAR_RANDOM_BELOW,
                          share: float = TOP_SHARE) -> float:
        """By what factor the run's ε must grow before this bound reaches ``target``."""
        g = max(1, math.floor(share * self.candidates))
        needed = math.log(target / (1.0 - target) * (self.candidates - g) / g)
        return max(1.0, needed / self.max_log_odds) if self.max_log_odds > 0 else math.inf


@dataclass(frozen=True)
class SerenadeSelection:
    """The two kinds of draws of a strict Serenade run (see the module docstring)."""

    initial: DrawStrength
    extension: DrawStrength

    @property
    def near_random(self) -> bool:
        """The initial-pair draws land among the best 1 % with probability < ½."""
        return self.initial.top_share_bound() < NEAR_RANDOM_BELOW

    def warning(self, epsilon: float, label: str) -> str:
        """A markdown warning for the launch form, or ``""`` when the draws can select."""
        if not self.near_random:
            return ""
        i, e = self.initial, self.extension
        return (f"**{label} draws close to random on this dataset at ε = {epsilon:g}** "
                f"(from the schema's public grid and the parameters, 0 ε). Each initial-pair "
                f"draw (ε = {i.epsilon:.3g}) chooses among {i.candidates:,} literal pairs and "
                f"can favour the best over any other by at most {math.exp(i.max_log_odds):,.1f}×"
                f": it lands among the best 1 % of pairs with probability at most "
                f"{i.top_share_bound():.1%}. Each extension draw (ε = {e.epsilon:.3g}, up to "
                f"{e.candidates:,} candidates) favours by at most "
                f"{math.exp(e.max_log_odds):,.2f}×. Expect few, weak redescriptions: a tree "
                f"miner suits this dataset at this ε; {label}'s initial draws cannot reach an "
                f"even chance of the best 1 % below ε ≈ "
                f"{epsilon * i.epsilon_scale_for():,.2g} (numeric attributes with fewer "
                f"declared thresholds also help: each has (B + 1)(B + 2)/2 − 1 literals).")


def serenade_selection(schema: Schema, params: SerenadeParams) -> SerenadeSelection | None:
    """The public bound on a run's draws (None in faithful mode: its literals are data)."""
    if params.mode != STRICT:
        return None
    left, right = literal_counts(schema)
    slots = plan_budget(params)

    def smallest(role: str) -> float:
        return min(s.epsilon_nano for s in slots if s.role == role) / 1e9

    spread = math.tanh(float(params.steepness) / 2.0)      # 2 · min Δf
    per_red = 2 * (left + right) + 1
    ext_candidates = per_red * (params.init_pairs if params.algorithm == SERENADE_ES else 1)
    e_init, e_ext = smallest("init"), smallest("extend")
    return SerenadeSelection(
        DrawStrength("initial pair", e_init, left * right, e_init / spread),
        DrawStrength("extension", e_ext, ext_candidates, e_ext / spread))
