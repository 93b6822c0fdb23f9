"""What to expect from a run, said before it is launched and again when it returns little.

Everything here is computed from **public parameters only** (ε, the budget plan, the
tree depth, the noise kind): never from the data, so it costs 0 ε and may be shown to
anyone before anything is charged.

* :func:`expected_noise` — the noise of one noisy count and the noisy support above
  which a redescription's noisy Jaccard is expected within a tolerance of the truth.
  It uses the same error model as Explore's suggested threshold
  (:func:`dpcore.redescriptions.pruning.jaccard_error_sd`), for the best case of a
  one-leaf query on each side, so the suggested threshold after the run lands near it
  (wider queries sum more noisy cells and need a little more support).
* :func:`miner_warnings` — settings where a miner is known to return little, e.g.
  MCMCTreePair at a large ε: its trees stay nearly random (only ω of each trial's ε
  chooses them), and with accurate counts few of their leaf pairs pass Γ. On the
  clinic sample (InTr 4, the paper's ω 0.1; the default is now 0.5): ≈ 125
  redescriptions at ε = 1, 27–43 at ε = 3, 12–13 at ε = 5, 0–2 at ε = 10; at ε = 10,
  ω = 0.9 gives ≈ 100 and AltMCMC / AltExpM 18–64.
  And Serenade where its exponential-mechanism draws choose among so many literal pairs
  that they are close to uniform (:mod:`dpcore.redescriptions.serenade.selection`: a bound
  from the schema's public grid).
* :func:`empty_result_advice` — what to try when a run released nothing (a larger ε
  is the wrong advice for MCMCTreePair at a large ε).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from dpcore.data.schema import Schema
from dpcore.errors import DpcoreError
from dpcore.redescriptions.params import RedescriptionParams, plan_budget
from dpcore.redescriptions.pruning import cell_noise_variance, jaccard_error_sd
from dpcore.redescriptions.serenade.selection import serenade_selection
from dpcore.registry import ALGORITHM_LABELS, FAITHFUL, MCMCTREEPAIR, PAPER_SCORE, STRICT

from ..common.threshold import DEFAULT_TOLERANCE

__all__ = ["DEFAULT_TOLERANCE", "ExpectedNoise", "expected_noise", "expectation_text",
           "tree_pair_starved", "miner_warnings", "empty_result_advice",
           "LARGE_EPSILON", "PAIR_EPSILON_ENOUGH"]

#: The tolerance of the suggested pruning threshold (Explore starts there too).
#: MCMCTreePair from this ε on returns fewer redescriptions than at ε = 1 (clinic sample).
LARGE_EPSILON = 3.0
#: ... unless each trial's tree pair gets at least this much ε (ε·ω/InTr): ω = 0.9 at
#: ε = 10, InTr = 4 (2.25) still returns ≈ 100 on clinic; ω = 0.5 (1.25) only 3–6.
PAIR_EPSILON_ENOUGH = 2.0
#: The Jaccard of the typical redescription the estimate is made for.
_TYPICAL_JACCARD = 0.5
_MEAN_ABS = math.sqrt(2.0 / math.pi)   # E|X| / sd of a centred normal


@dataclass(frozen=True)
class ExpectedNoise:
    """The expected noise of a run, from its parameters only.

    ``count_sd``: standard deviation of the noise on one released count (rows).
    ``error_at_one``: expected |noisy J − true J| of a redescription with noisy
    support 1 (the error falls as 1 / support). ``support_for``: see the method.
    """

    count_sd: float
    error_at_one: float

    def error_at(self, support: float) -> float:
        """Expected |noisy J − true J| at noisy support ``support`` (rows)."""
        return math.inf if support <= 0 else self.error_at_one / support

    def support_for(self, tolerance: float = DEFAULT_TOLERANCE) -> float:
        """The noisy support above which the expected Jaccard error is ≤ ``tolerance``."""
        return self.error_at_one / tolerance


def expected_noise(params: RedescriptionParams) -> ExpectedNoise:
    """The noise a run of ``params`` adds, from its budget plan (public; validates).

    Tree miners: the smallest extraction budget ε_x of the plan; strict mode adds
    (discrete) Laplace(1/ε_x) to each cell of the leaf × leaf table of two full-depth
    trees (2^d leaves each), faithful mode Laplace(3/ε_x) to the table and to the
    marginals. Serenade: the smallest per-redescription share of ε_qual; strict
    mode noises a 4-cell table, faithful mode two counts at half of it each.
    """
    slots = plan_budget(params.validate())
    if params.is_serenade:
        eps = min(s.epsilon_nano for s in slots if s.role == "quality") / 1e9
        if params.mode == FAITHFUL:
            v = cell_noise_variance(eps / 2, 1.0, "continuous")
            spread = math.sqrt(2 * v)      # Var J ≈ v·(D² + I²)/U⁴, D = I = E at J = ½
        else:
            v = cell_noise_variance(eps, 1.0, params.noise)
            spread = math.sqrt(3 * v)      # Var J ≈ v·((U − E)² + 2E²)/U⁴ at U = 2E
        return ExpectedNoise(math.sqrt(v), spread / 4 * _MEAN_ABS)
    eps = min(s.epsilon_nano for s in slots if s.role == "extract") / 1e9
    leaves = 2 ** params.depth
    if params.mode == FAITHFUL:
        v = cell_noise_variance(eps / 3, 1.0, "continuous")
        sd = jaccard_error_sd(1.0, 1.0 / _TYPICAL_JACCARD, 1, 1, leaves, leaves, v, v)
    else:
        v = cell_noise_variance(eps, 1.0, params.noise)
        sd = jaccard_error_sd(1.0, 1.0 / _TYPICAL_JACCARD, 1, 1, leaves, leaves, v)
    return ExpectedNoise(math.sqrt(v), sd * _MEAN_ABS)


def _rows(x: float) -> str:
    if x >= 10_000:
        return f"{x:,.0f}"
    return f"{x:.2g}" if x < 10 else f"{x:.0f}"


def expectation_text(params: RedescriptionParams, tolerance: float = DEFAULT_TOLERANCE) -> str:
    """The pre-launch "what to expect" line (public parameters only, 0 ε)."""
    noise = expected_noise(params)
    support = noise.support_for(tolerance)
    if support < 1:
        # a fraction of a row is no count anyone can read (issue 32, point 13: "0.057 rows")
        return (f"**What to expect** (from the parameters alone, 0 ε): each released count "
                f"carries noise of {_noise_rows(noise.count_sd)}, so a redescription's noisy "
                f"Jaccard is expected within {tolerance:g} of the truth at any noisy "
                f"support: at this ε the noise is too small to matter, and Explore's "
                f"suggested pruning threshold will keep nearly everything.")
    return (f"**What to expect** (from the parameters alone, 0 ε): each released count "
            f"carries noise of {_noise_rows(noise.count_sd)}, so a redescription's "
            f"noisy Jaccard is expected within {tolerance:g} of the truth only above a "
            f"noisy support of about **{_rows(support)} rows** (one-leaf queries; wider "
            f"ones need a little more). That ignores that the miners release what looks "
            f"best after noise: Explore's suggested pruning threshold, which accounts for "
            f"it, lands at or above this; below it, high noisy Jaccards are mostly noise.")


def _noise_rows(sd: float) -> str:
    return "less than one row" if sd < 1 else f"about ±{_rows(sd)} rows"


def tree_pair_starved(algorithm: str, epsilon: float, omega: float, in_tr: int,
                      mode: str = STRICT, tree_score: str = PAPER_SCORE) -> bool:
    """Whether MCMCTreePair samples by the paper's score at a large ε with too little ε for
    its tree pairs.

    Then its trees are nearly random while its counts are accurate, and few leaf pairs
    pass the constraints Γ: a larger ε returns *fewer* redescriptions. The count-scale
    score (strict mode's ``tree_score = count``) moves by rows, so its chain is steered
    at these budgets and the warning does not apply.
    """
    paper_score = mode == FAITHFUL or tree_score == PAPER_SCORE
    return (algorithm == MCMCTREEPAIR and paper_score and epsilon >= LARGE_EPSILON
            and epsilon * omega / max(in_tr, 1) < PAIR_EPSILON_ENOUGH)


def _starved_text(epsilon: float, omega: float, in_tr: int) -> str:
    pair = epsilon * omega / max(in_tr, 1)
    needed = min(0.95, PAIR_EPSILON_ENOUGH * max(in_tr, 1) / epsilon)
    return (f"MCMCTreePair at ε = {epsilon:g} often returns **few or no** redescriptions: "
            f"each tree pair gets only ε·ω/InTr = {pair:.3g}, so its trees stay close to "
            f"random, and with counts this accurate few of their leaf pairs pass the "
            f"constraints Γ (on the clinic sample: about 125 at ε = 1, 0–2 at ε = 10). "
            f"A larger ε does not help; raise ω to about {needed:.2g} or more (the trees "
            f"get more of the budget), or use AltMCMC or AltExpM.")


def miner_warnings(params: RedescriptionParams, schema: Schema | None = None) -> list[str]:
    """Warnings, from public parameters (and the dataset's public ``schema``) only, where a
    miner is known to return little."""
    out = []
    if params.is_serenade:
        selection = serenade_selection(schema, params) if schema is not None else None
        if selection is not None and selection.near_random:
            out.append(selection.warning(params.epsilon, ALGORITHM_LABELS[params.algorithm]))
        return out                         # no tree pair to starve
    if tree_pair_starved(params.algorithm, params.epsilon, params.omega, params.in_tr,
                         params.mode, params.tree_score):
        out.append(_starved_text(params.epsilon, params.omega, params.in_tr))
    return out


def empty_result_advice(algorithm: str, params: Mapping) -> str:
    """What to try after runs of ``algorithm`` with ``params`` (a run's stored parameters)
    released no redescription that passed Γ."""
    label = ALGORITHM_LABELS.get(algorithm, algorithm)
    try:
        epsilon = float(params.get("epsilon"))
        omega = float(params.get("omega"))
        in_tr = int(params.get("in_tr"))
    except (TypeError, ValueError, DpcoreError):
        epsilon, omega, in_tr = math.nan, math.nan, 1
    # A stored run without tree_score ran before the choice existed: the paper's score.
    starved = tree_pair_starved(algorithm, epsilon, omega, in_tr,
                                str(params.get("mode", STRICT)),
                                str(params.get("tree_score", PAPER_SCORE)))
    if math.isfinite(epsilon) and starved:
        return _starved_text(epsilon, omega, in_tr)
    return (f"This {label} run released no redescription that passed the constraints Γ. "
            "On the Mine page, try a larger ε (less noise), more trials, or looser "
            "constraints Γ (a smaller Γ.minJ or a larger Γ.pval).")
