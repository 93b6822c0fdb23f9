"""SerenadeES and SerenadeCS: greedy DP redescription mining (docs/ALGORITHMS.md §3).

Karjalainen, Galbrun & Miettinen, "Serenade" (KDID 2022). Queries are literals
(:mod:`dpcore.redescriptions.serenade.literals`) joined left to right by ∧/∨, at most
``max_attributes`` attributes per side, ∨ on one side only. Quality
f = J·σ(|E11|) (:mod:`dpcore.redescriptions.serenade.quality`); every choice is one
exponential-mechanism draw P(c) ∝ exp(ε'·f(c)/(2Δf)), charged before it is drawn.

Steps and what each spends (the plan is :func:`dpcore.redescriptions.params.serenade_budget`):

1. **Row count** (strict): N̂ = N + discrete Laplace noise fixes x0 = 0.1·N̂ and
   Δf; faithful mode reads the true N (not DP, as the original).
2. **InitialPairs**: I independent draws over all (left literal, right literal)
   pairs, ε_init/I each. Drawn in two exact stages: an attribute pair ∝ the sum
   of its pairs' weights, then a pair inside it.
3. **SerenadeES**: K rounds, each one draw (ε_ext/K) over the union of every
   redescription's extensions and its "no change". Strict mode memoises each
   redescription's exact scores and log-weight while it is unchanged (exact
   values never go stale; fresh Gumbel noise every round). Faithful mode, as the
   original code: each redescription's drawn best extension is memoised for up
   to ``memo_age`` rounds and the one with the highest *exact* quality is
   applied — a data-dependent choice no budget pays for (not DP).
   **SerenadeCS**: L rounds; each extends every surviving redescription by
   one draw (ε_ext/(L·I)) and measures its noisy quality; one whose noisy J
   falls below ``min_acc`` stops and is returned in its previous form. The
   budget of its remaining rounds is charged but not spent.
4. **Noisy quality**: strict releases the 4-cell table (|E11|, |E10|, |E01|,
   |E00|) of each redescription with one ε (disjoint cells: one added row
   changes one cell by 1), so supports, Ñ and the p-value follow by
   post-processing. Faithful releases the original's two counts |E11| and
   |E10|+|E01| with ε/2 each (continuous Laplace); J~ = Ĩ/(Ĩ + D̃).

Literal candidates: strict uses the schema's public grid; faithful uses the
data's equal-frequency segments (:func:`dpcore.redescriptions.coding.code_view_segments`).
No candidate is ever filtered by its support on the data.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.mechanisms import exponential_index, noisy_counts
from dpcore.redescriptions.coding import CodedView
from dpcore.redescriptions.extract import _clip_stats, marg_pvalues
from dpcore.redescriptions.params import BudgetSlot, SerenadeParams, plan_budget
from dpcore.redescriptions.results import Redescription, SerenadeQuery, formula_text
from dpcore.redescriptions.serenade.kernels import (
    extension_scores,
    log_sum_exp,
    pair_group_log_weights,
    pair_scores,
    span_row_index,
)
from dpcore.redescriptions.serenade.literals import LiteralSet, literal_mask, literal_set
from dpcore.redescriptions.serenade.quality import quality, quality_sensitivity
from dpcore.registry import SERENADE_ES, STRICT


def draw_from_union(log_weights: np.ndarray, scores: list, factor: float,
                    rng: np.random.Generator) -> tuple[int, int]:
    """One exponential-mechanism draw over the union of several candidate groups.

    Picks group g ∝ exp(log_weights[g]) (``log_weights[g]`` = log Σ exp(factor·f)
    over group g), then candidate c of g ∝ exp(factor·scores[g][c]): overall
    P(g, c) ∝ exp(factor·f(g, c)), exactly the exponential mechanism over all
    candidates. **Charges nothing**: the caller charges the accountant first.
    """
    g = int(exponential_index(log_weights, 1.0, rng))
    return g, int(exponential_index(scores[g], factor, rng))


@dataclass
class _Red:
    """A redescription being grown: literal indices, operators and row masks per side."""

    trial: int
    lits: tuple[list, list]
    ops: tuple[list, list]
    masks: tuple[np.ndarray, np.ndarray]
    steps: int = 0

    def allow(self, max_attributes: int) -> np.ndarray:
        """Which of the four extension blocks (L∧, L∨, R∧, R∨) the query structure allows."""
        out = np.zeros(4, dtype=np.bool_)
        for side in (0, 1):
            room = len(self.lits[side]) < max_attributes
            other_has_or = "or" in self.ops[1 - side]
            out[2 * side] = room
            out[2 * side + 1] = room and not other_has_or
        return out

    def extended(self, side: int, op: str, lit: int, mask: np.ndarray) -> _Red:
        lits = [list(self.lits[0]), list(self.lits[1])]
        ops = [list(self.ops[0]), list(self.ops[1])]
        masks = list(self.masks)
        lits[side].append(lit)
        ops[side].append(op)
        masks[side] = masks[side] & mask if op == "and" else masks[side] | mask
        return _Red(self.trial, tuple(lits), tuple(ops), tuple(masks), self.steps + 1)

    def cells(self) -> np.ndarray:
        """True [|E11|, |E10|, |E01|, |E00|] (private)."""
        left, right = self.masks
        e11 = int(np.count_nonzero(left & right))
        e10 = int(np.count_nonzero(left)) - e11
        e01 = int(np.count_nonzero(right)) - e11
        return np.array([e11, e10, e01, left.size - e11 - e10 - e01], dtype=np.int64)


@dataclass
class _Measure:
    """Released noisy statistics of one redescription (post-processed)."""

    support_left: float
    support_right: float
    support_both: float
    jaccard: float
    pvalue: float
    n: float


@dataclass
class SerenadeOutput:
    """What :func:`mine_serenade` returns to :func:`dpcore.redescriptions.mining.mine`.

    ``redescriptions`` are DP releases; ``traces`` and ``phase_seconds`` are
    owner-only diagnostics (true qualities, timings).
    """

    redescriptions: list[Redescription]
    traces: dict[str, list[float]] = field(default_factory=dict)
    phase_seconds: dict[str, float] = field(default_factory=dict)
    unspent_nano: int = 0


class _Miner:
    def __init__(self, coded, params, rng, accountant, progress):
        self.coded = coded
        self.lits: tuple[LiteralSet, LiteralSet] = (literal_set(coded[0]), literal_set(coded[1]))
        self.params, self.rng, self.accountant = params, rng, accountant
        self.progress = progress or (lambda f, m: None)
        self.strict = params.mode == STRICT
        self.slots = {(s.trial, s.step, s.role): s for s in plan_budget(params)}
        self.phase_seconds: dict[str, float] = {}
        self.traces: dict[str, list[float]] = {}
        # Private row index (true data), used only inside the scoring kernels.
        self.spans = tuple(span_row_index(c.codes, c.n_codes, ls.start, ls.lo, ls.hi)
                           for c, ls in zip(coded, self.lits))
        self.n_rows = coded[0].codes.shape[1]
        self.x0 = self.delta = 0.0

    def _timed(self, name: str, started: float) -> None:
        self.phase_seconds[name] = self.phase_seconds.get(name, 0.0) + time.perf_counter() - started

    def slot(self, trial: int, step: int, role: str) -> BudgetSlot:
        return self.slots[(trial, step, role)]

    def min_epsilon(self, role: str) -> float:
        """The smallest ε (float) of a role's slots: one factor for all its draws.

        Slots of a role differ by at most one nano-ε; scoring every draw with the
        smallest keeps each draw within what it is charged.
        """
        return min(s.epsilon_nano for s in self.slots.values() if s.role == role) / 1e9

    # ---------------------------------------------------------------- row count, Δf
    def fix_quality_scale(self) -> None:
        if self.strict:
            slot = self.slot(0, 0, "rows")
            noisy = noisy_counts(np.array([self.n_rows]), kind=self.params.noise, sensitivity=1,
                                 epsilon_nano=slot.epsilon_nano, rng=self.rng,
                                 accountant=self.accountant, label="row count N̂")
            n_hat = max(1.0, float(np.rint(noisy[0])))
        else:
            n_hat = float(self.n_rows)  # faithful: the true N, as the original
        self.n_hat = n_hat
        self.x0 = 0.1 * n_hat
        self.delta = quality_sensitivity(n_hat, self.params.steepness)

    def factor(self, epsilon: float) -> float:
        return epsilon / (2.0 * self.delta)

    # ---------------------------------------------------------------- kernels
    def _lit_args(self, side: int):
        c, ls = self.coded[side], self.lits[side]
        return c.codes, c.n_codes, ls.start, ls.lo, ls.hi

    def extension_scores(self, red: _Red) -> np.ndarray:
        used = []
        for side in (0, 1):
            u = np.zeros(len(self.coded[side].view.attributes), dtype=np.bool_)
            u[self.lits[side].attr[red.lits[side]]] = True
            used.append(u)
        return extension_scores(*self._lit_args(0), self.spans[0], used[0],
                                *self._lit_args(1), self.spans[1], used[1],
                                red.allow(self.params.max_attributes), red.masks[0],
                                red.masks[1], self.params.steepness, self.x0)

    def apply(self, red: _Red, index: int) -> _Red:
        """The redescription after candidate ``index`` of :meth:`extension_scores`."""
        n_l, n_r = self.lits[0].size, self.lits[1].size
        for side, op, start, size in ((0, "and", 0, n_l), (0, "or", n_l, n_l),
                                      (1, "and", 2 * n_l, n_r), (1, "or", 2 * n_l + n_r, n_r)):
            if start <= index < start + size:
                k = index - start
                return red.extended(side, op, k, literal_mask(self.coded[side],
                                                              self.lits[side], k))
        return red  # "no change"

    # ---------------------------------------------------------------- InitialPairs
    def initial_pairs(self) -> list[_Red]:
        p = self.params
        fac = self.factor(self.min_epsilon("init"))
        lits_l, lits_r = self.lits
        log_w = pair_group_log_weights(*self._lit_args(0), *self._lit_args(1), p.steepness,
                                       self.x0, fac)
        n_attr_r = lits_r.start.size - 1
        reds = []
        for i in range(p.init_pairs):
            self.accountant.spend("exponential", f"initial pair {i}",
                                  self.slot(i, 0, "init").epsilon_nano, self.delta)
            group = exponential_index(log_w, 1.0, self.rng)
            a, b = divmod(int(group), n_attr_r)
            la0, la1 = lits_l.start[a], lits_l.start[a + 1]
            lb0, lb1 = lits_r.start[b], lits_r.start[b + 1]
            scores = np.empty((la1 - la0) * (lb1 - lb0))
            pair_scores(self.coded[0].codes[a], self.coded[0].n_codes[a], lits_l.lo[la0:la1],
                        lits_l.hi[la0:la1], self.coded[1].codes[b], self.coded[1].n_codes[b],
                        lits_r.lo[lb0:lb1], lits_r.hi[lb0:lb1], p.steepness, self.x0, scores)
            j = int(exponential_index(scores, fac, self.rng))
            kl, kr = la0 + j // (lb1 - lb0), lb0 + j % (lb1 - lb0)
            reds.append(_Red(i, ([int(kl)], [int(kr)]), ([], []),
                             (literal_mask(self.coded[0], lits_l, kl),
                              literal_mask(self.coded[1], lits_r, kr))))
            self.progress(0.3 * (i + 1) / p.init_pairs, f"initial pair {i + 1}/{p.init_pairs}")
        return reds

    # ---------------------------------------------------------------- SerenadeES
    def extend_es(self, reds: list[_Red]) -> list[_Red]:
        p = self.params
        fac = self.factor(self.min_epsilon("extend"))
        scores: list = [None] * len(reds)
        log_w = np.full(len(reds), -np.inf)
        memo: dict[int, list] = {}  # faithful: red → [candidate, exact quality, age]
        trace = []
        for k in range(1, p.es_rounds + 1):
            for i, red in enumerate(reds):
                if scores[i] is None:
                    scores[i] = self.extension_scores(red)
                    log_w[i] = log_sum_exp(scores[i], fac)
            self.accountant.spend("exponential", f"ES round {k}",
                                  self.slot(-1, k, "extend").epsilon_nano, self.delta)
            if self.strict:
                i, cand = draw_from_union(log_w, scores, fac, self.rng)
            else:
                for j in range(len(reds)):
                    if j not in memo:
                        c = int(exponential_index(scores[j], fac, self.rng))
                        memo[j] = [c, float(scores[j][c]), 0]
                i = max(memo, key=lambda j: memo[j][1])  # exact quality: not DP (original)
                cand = memo.pop(i)[0]
                for j in list(memo):
                    memo[j][2] += 1
                    if memo[j][2] >= p.memo_age:
                        del memo[j]
            new = self.apply(reds[i], cand)
            trace.append(float(scores[i][cand]))
            if new is not reds[i]:
                reds[i], scores[i] = new, None
                memo.pop(i, None)
            self.progress(0.3 + 0.6 * k / p.es_rounds, f"ES round {k}/{p.es_rounds}")
        self.traces["ES: true quality of the chosen extension"] = trace
        return reds

    # ---------------------------------------------------------------- SerenadeCS
    def extend_cs(self, reds: list[_Red], measures: list[_Measure]
                  ) -> tuple[list[_Red], list[_Measure], int]:
        """L rounds over the initial pairs, given their round-0 measurements."""
        p = self.params
        fac = self.factor(self.min_epsilon("extend"))
        alive = [m.jaccard >= p.min_acc for m in measures]
        unspent = 0
        for r in range(1, p.cs_rounds + 1):
            for i, red in enumerate(reds):
                if not alive[i]:
                    unspent += (self.slot(i, r, "extend").epsilon_nano
                                + self.slot(i, r, "quality").epsilon_nano)
                    continue
                started = time.perf_counter()
                scores = self.extension_scores(red)
                self.accountant.spend("exponential", f"CS redescription {i} round {r}",
                                      self.slot(i, r, "extend").epsilon_nano, self.delta)
                cand = int(exponential_index(scores, fac, self.rng))
                self.traces.setdefault(f"CS redescription {i}: true quality", []).append(
                    float(scores[cand]))
                new = self.apply(red, cand)
                self._timed("extensions", started)
                started = time.perf_counter()
                m = self.measure(new, self.slot(i, r, "quality"),
                                 f"redescription {i} round {r}")
                self._timed("quality", started)
                if m.jaccard < p.min_acc:
                    alive[i] = False  # keep the previous form and its measurement
                else:
                    reds[i], measures[i] = new, m
            self.progress(0.3 + 0.6 * r / p.cs_rounds, f"CS round {r}/{p.cs_rounds}")
        return reds, measures, unspent

    # ---------------------------------------------------------------- noisy quality
    def measure(self, red: _Red, slot: BudgetSlot, label: str) -> _Measure:
        cells = red.cells()
        if self.strict:
            noisy = noisy_counts(cells, kind=self.params.noise, sensitivity=1,
                                 epsilon_nano=slot.epsilon_nano, rng=self.rng,
                                 accountant=self.accountant, label=f"{label} quality table",
                                 parallel=4)
            noisy = np.maximum(noisy, 0.0)
            n = float(noisy.sum())
            ql, qr, e11, jac = _clip_stats(noisy[0] + noisy[1], noisy[0] + noisy[2], noisy[0], n)
            pval = float(marg_pvalues(ql, qr, e11, n))
            return _Measure(float(ql), float(qr), float(e11), float(jac), pval, n)
        half = slot.epsilon_nano // 2
        inter = noisy_counts(cells[:1], kind="continuous", sensitivity=1, epsilon_nano=half,
                             rng=self.rng, accountant=self.accountant,
                             label=f"{label} |E11|")
        diff = noisy_counts(np.array([cells[1] + cells[2]]), kind="continuous", sensitivity=1,
                            epsilon_nano=slot.epsilon_nano - half, rng=self.rng,
                            accountant=self.accountant, label=f"{label} |E10|+|E01|")
        i_, d_ = max(float(inter[0]), 0.0), max(float(diff[0]), 0.0)
        jac = i_ / (i_ + d_) if i_ + d_ > 0 else 0.0
        return _Measure(math.nan, math.nan, i_, jac, math.nan, float(self.n_rows))

    # ---------------------------------------------------------------- release
    def query(self, red: _Red, side: int) -> SerenadeQuery:
        tests = tuple(self.lits[side].test(k) for k in red.lits[side])
        ops = tuple(red.ops[side])
        return SerenadeQuery(side, formula_text(tests, ops), tests, ops)

    def release(self, reds: list[_Red], measures: list[_Measure]) -> list[Redescription]:
        """Γ filters and de-duplication on released values only (post-processing)."""
        p = self.params
        out, seen = [], set()
        for red, m in zip(reds, measures):
            left, right = self.query(red, 0), self.query(red, 1)
            key = (left.text, right.text)
            if key in seen:
                continue
            if (m.support_both < p.min_support or m.jaccard < p.min_jaccard
                    or m.support_both > p.max_support * m.n
                    or (not math.isnan(m.pvalue) and m.pvalue > p.max_pvalue)):
                continue
            seen.add(key)
            out.append(Redescription(len(out), left, right, m.support_left, m.support_right,
                                     m.support_both, m.jaccard, m.pvalue, red.trial,
                                     red.steps, -1))
        return out


def mine_serenade(coded: tuple[CodedView, CodedView], params: SerenadeParams,
                  rng: np.random.Generator, accountant: PrivacyAccountant,
                  progress=None) -> SerenadeOutput:
    """Run SerenadeES or SerenadeCS (``params.algorithm``) on coded views.

    Parameters
    ----------
    coded : (CodedView, CodedView)
        Left and right views: the public grid (strict) or data segments (faithful).
    params : SerenadeParams
        Validated Serenade parameters; ``plan_budget(params)`` is what may be spent.
    rng : numpy.random.Generator
        All randomness.
    accountant : PrivacyAccountant
        Charged before every draw and count.
    progress : callable(fraction, message), optional

    Returns
    -------
    SerenadeOutput
        Released redescriptions (DP), owner-only traces and timings, and the
        nano-ε charged but left unspent (SerenadeCS redescriptions that stopped).
    """
    miner = _Miner(coded, params, rng, accountant, progress)
    started = time.perf_counter()
    miner.fix_quality_scale()
    reds = miner.initial_pairs()
    miner._timed("initial pairs", started)
    if params.algorithm == SERENADE_ES:
        started = time.perf_counter()
        reds = miner.extend_es(reds)
        miner._timed("extensions", started)
        started = time.perf_counter()
        measures = [miner.measure(red, miner.slot(i, 0, "quality"), f"redescription {i}")
                    for i, red in enumerate(reds)]
        unspent = 0
        miner._timed("quality", started)
    else:
        started = time.perf_counter()
        measures = [miner.measure(red, miner.slot(red.trial, 0, "quality"),
                                  f"redescription {red.trial} round 0") for red in reds]
        miner._timed("quality", started)
        reds, measures, unspent = miner.extend_cs(reds, measures)
    miner.traces["final true quality"] = [
        quality(int(c[0]), int(c[0] + c[1] + c[2]), params.steepness, miner.x0)
        for c in (red.cells() for red in reds)]
    return SerenadeOutput(miner.release(reds, measures), miner.traces, miner.phase_seconds,
                          unspent)
