"""Replay checks with frozen randomness (``dpcore.privacy.audit.NoiseRecorder``) for every
family, and what reaches the numba samplers (docs/PRIVACY.md §13, "Replay").

Each family runs once, seeded, on a small public-shaped dataset D with every noisy release
recorded, then on its neighbour D′ (one row or record added, §2) with the same seed and
every release forced to the output recorded on D. A private run then:

* makes the same releases, in the same order, with the same ε and Δ (no branch before a
  noise draw reads the data), charges the same calls and releases exactly the same result
  (everything after a release is post-processing of released values);
* moves every release's true values by at most its declared Δ in L1 norm (realised
  sensitivity ≤ Δ);
* draws every release's noise at exactly the Δ/ε it was charged, from a stream state no
  other release used (the noise is redrawn from the recorded state and compared);
* hands the numba samplers (AltExpM's levels, the MCMC chains, Serenade's draws) exactly the
  ε the accountant was charged, with the sensitivity of the score (2 for Gini, 1 or 3 for the
  pair scores, Δf at the released N̂) and the Hastings correction on;
* for every charged exponential mechanism (``mechanisms.exponential_mechanism``, MC-GEN's
  tree edges): draws at no more than its charged ε/(2Δ), is forced on D′ to D's choice (so
  the runs stay coupled), moves no candidate's utility by more than Δ, and gives every
  candidate probabilities on D and D′ whose ratio is within e^ε — the neighbour inequality of
  the draw's whole release distribution, computed exactly from the recorded utilities.

Every check here is a plain function of no arguments, so
``tests/dpcore/privacy/test_privacy_mutants.py`` can run the same checks under each planted bug.
The designs are tiny (20–45 rows): the whole module takes a few seconds once the kernels are
compiled.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
import pytest

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.schema import BOOLEAN, NUMERIC, Attribute, Location, Schema, ViewSpec
from dpcore.data.sequences.dataset import SequenceDataset
from dpcore.data.sequences.schema import SequenceSchema
from dpcore.data.table.schema import schema_from_dict
from dpcore.data.table.table import table_from_frame
from dpcore.errors import ParameterError
from dpcore.privacy import mechanisms
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.audit import (
    NoiseRecorder,
    calibration_problems,
    redraw_problems,
    replay_differences,
    shared_streams,
)
from dpcore.privacy.units import nano_to_epsilon
from dpcore.redescriptions import bitset_mcmc
from dpcore.redescriptions import kernels as tree_kernels
from dpcore.redescriptions.custom_query import CustomQueryParams, run_custom_query
from dpcore.redescriptions.kernels.scores import PAIR_SENSITIVITY_COUNT, PAIR_SENSITIVITY_PAPER
from dpcore.redescriptions.mining import mine
from dpcore.redescriptions.params import SerenadeParams, TreeParams
from dpcore.redescriptions.params import plan_budget as tree_plan
from dpcore.redescriptions.regions import RegionMapParams, run_region_map
from dpcore.redescriptions.serenade import miner as serenade_miner
from dpcore.redescriptions.serenade.quality import quality_sensitivity
from dpcore.registry import (
    ALTEXPM,
    ALTMCMC,
    COUNT_SCORE,
    CUSTOM_QUERY,
    FLOOR,
    MCGEN,
    MCMCTREEPAIR,
    PFS2,
    PFS2_BASELINE,
    REGION_MAP,
    SERENADE_CS,
    SERENADE_ES,
)
from dpcore.sequences.miner import mine_frequent_sequences
from dpcore.sequences.params import SequenceMiningParams
from dpcore.sequences.params import plan_budget as sequence_plan
from dpcore.synthesis.mcgen import correlation_noise
from dpcore.synthesis.miner import synthesize
from dpcore.synthesis.params import CORRELATION_GROUPS, TREE, SynthesisParams
from dpcore.synthesis.params import plan_budget as synthesis_plan
from tests.support import reference as R

MSG = R.SEED_MSG
#: The replay case (and mutant family) of MC-GEN-DP with its tree structure.
MCGEN_TREE = f"{MCGEN}-{TREE}"

#: The sensitivities the privacy argument states (dpcore/redescriptions/PRIVACY.md §6.2),
#: restated here rather than read from the code under test: Gini scores (AltExpM, AltMCMC) Δ = 2.
GINI_SENSITIVITY = 2.0


# =========================================================================== the kernels' inputs

@dataclass
class KernelTaps:
    """Records the ε (and flags) each numba sampler receives during a run.

    Wraps the module attributes the family code calls at run time: the AltExpM tree kernel,
    both strict bitset chains and Serenade's exponential-mechanism draw. Each wrapper calls
    the real kernel unchanged."""

    expmech: list = field(default_factory=list)        # level ε arrays
    single: list = field(default_factory=list)         # (ε, hastings)
    pair: list = field(default_factory=list)           # (ε, hastings, count_scale)
    serenade: list = field(default_factory=list)       # factors other than the group stage
    _undo: list = field(default_factory=list)

    def _wrap(self, owner, name, record):
        real = getattr(owner, name)

        def tapped(*args):
            record(args)
            return real(*args)

        setattr(owner, name, tapped)
        self._undo.append((owner, name, real))

    def __enter__(self) -> KernelTaps:
        self._wrap(tree_kernels, "expmech_tree",
                   lambda a: self.expmech.append(np.array(a[13], dtype=np.float64)))
        self._wrap(bitset_mcmc, "mcmc_single_tree_bits",
                   lambda a: self.single.append((float(a[10]),
                                                 bool(a[15]) if len(a) > 15 else True)))
        self._wrap(bitset_mcmc, "mcmc_tree_pair_bits",
                   lambda a: self.pair.append((float(a[16]), bool(a[21]), bool(a[22]))))
        # the group stage draws with factor 1.0 from log-weights; every other draw passes the
        # exponential mechanism's factor ε/(2Δf)
        self._wrap(serenade_miner, "exponential_index",
                   lambda a: None if a[1] == 1.0 else self.serenade.append(float(a[1])))
        return self

    def __exit__(self, *exc) -> None:
        for owner, name, real in reversed(self._undo):
            setattr(owner, name, real)


def kernel_problems(taps: KernelTaps, accountant: PrivacyAccountant, events,  # noqa: PLR0912
                    steepness: float | None = None, generic=()) -> list[str]:
    """What reached the numba samplers against what the accountant was charged
    (``steepness``: Serenade's s, to recompute Δf at the released N̂; ``generic``: the
    :class:`ExponentialDraw` s of ``mechanisms.exponential_mechanism``, checked apart)."""
    problems = []
    calls = list(accountant.calls)
    # AltExpM: one kernel call per tree, its level ε exactly the tree's charged levels (Δ 2)
    trees: dict[str, list] = {}
    for c in calls:
        if c.mechanism == "exponential" and " level " in c.label and "unused" not in c.label:
            trees.setdefault(c.label.rsplit(" level ", 1)[0], []).append(c)
    charged_levels = [[nano_to_epsilon(c.epsilon_nano) for c in cs] for cs in trees.values()]
    for cs in trees.values():
        if any(c.sensitivity != GINI_SENSITIVITY for c in cs):
            problems.append(f"AltExpM tree charged with Δ ≠ 2: {cs}")
    for levels in taps.expmech:
        match = next((c for c in charged_levels if list(levels) == c), None)
        if match is None:
            problems.append(f"AltExpM kernel drew levels at ε {list(levels)}; charged "
                            f"{charged_levels}")
        else:
            charged_levels.remove(match)
    # chains: each chain's ε is one charged mcmc call's, with the score's Δ
    mcmc = [c for c in calls if c.mechanism == "mcmc"]
    for eps, hastings in taps.single:
        match = next((c for c in mcmc if nano_to_epsilon(c.epsilon_nano) == eps
                      and c.sensitivity == GINI_SENSITIVITY), None)
        if not hastings:
            problems.append("a strict single-tree chain ran without the Hastings correction")
        if match is None:
            problems.append(f"a single-tree chain ran at ε = {eps}; charged {mcmc}")
        else:
            mcmc.remove(match)
    for eps, hastings, count_scale in taps.pair:
        delta = PAIR_SENSITIVITY_COUNT if count_scale else PAIR_SENSITIVITY_PAPER
        match = next((c for c in mcmc if nano_to_epsilon(c.epsilon_nano) == eps
                      and c.sensitivity == delta), None)
        if not hastings:
            problems.append("a strict pair chain ran without the Hastings correction")
        if match is None:
            problems.append(f"a pair chain ran at ε = {eps} (Δ {delta}); charged {mcmc}")
        else:
            mcmc.remove(match)
    # Serenade: the k-th draw's factor is at most its charge's ε/(2Δf), Δf at the released N̂
    drawn_apart = {id(d.charge) for d in generic}
    draws = [c for c in calls if c.mechanism == "exponential" and " level " not in c.label
             and id(c) not in drawn_apart]
    if taps.serenade or draws:
        n_hat_event = next((e for e in events if e.label == "row count N̂"), None)
        if n_hat_event is None:
            return problems + ["Serenade drew without releasing N̂ first"]
        n_hat = max(1.0, float(np.rint(np.asarray(n_hat_event.output, dtype=float)[0])))
        delta_f = None if steepness is None else quality_sensitivity(n_hat, steepness)
        if len(taps.serenade) != len(draws):
            problems.append(f"{len(taps.serenade)} Serenade draws for {len(draws)} charges")
        for factor, call in zip(taps.serenade, draws):
            limit = nano_to_epsilon(call.epsilon_nano) / (2.0 * call.sensitivity)
            if factor > limit * (1 + 1e-12):
                problems.append(f"{call.label}: drawn at factor {factor:.12g} > ε/(2Δf) = "
                                f"{limit:.12g}")
            if delta_f is not None and not math.isclose(call.sensitivity, delta_f,
                                                        rel_tol=1e-12):
                problems.append(f"{call.label}: charged Δf = {call.sensitivity} but Δf at the "
                                f"released N̂ = {n_hat:g} is {delta_f}")
    return problems


@dataclass(frozen=True)
class ExponentialDraw:
    """One charged exponential-mechanism draw as ``mechanisms.exponential_index`` saw it."""

    scores: np.ndarray      # the utilities (private: only in a test's memory)
    factor: float           # what the draw used: probabilities ∝ exp(factor·u)
    chosen: int             # the released index (on D′: forced to D's)
    charge: object          # the accountant call made just before the draw
    state: str              # the generator's state before the draw (repr)


@dataclass
class ExponentialTaps:
    """Records (and on D′ forces) every draw of the charged exponential mechanism.

    ``mechanisms.exponential_mechanism`` charges the accountant, then calls the module's
    ``exponential_index``: the wrapper pairs each draw with the accountant's last call. With
    ``play`` (D's draws) the k-th draw still consumes its uniform, then releases D's k-th
    choice, as :class:`~dpcore.privacy.audit.NoiseRecorder` forces the noisy releases."""

    accountant: PrivacyAccountant
    play: list | None = None
    draws: list = field(default_factory=list)
    diverged: str | None = None
    _real: Callable | None = None

    def __enter__(self) -> ExponentialTaps:
        real = self._real = mechanisms.exponential_index

        def tapped(scores, factor, rng):
            state = repr(rng.bit_generator.state)
            chosen = int(real(scores, factor, rng))
            k = len(self.draws)
            if self.play is not None and self.diverged is None:
                if k >= len(self.play):
                    self.diverged = f"exponential draw {k} was not made on D"
                elif not np.array_equal(np.isneginf(scores), np.isneginf(self.play[k].scores)):
                    self.diverged = f"exponential draw {k}: other candidates excluded than on D"
                else:
                    chosen = self.play[k].chosen
            calls = self.accountant.calls
            self.draws.append(ExponentialDraw(np.array(scores, dtype=np.float64), float(factor),
                                              chosen, calls[-1] if calls else None, state))
            return chosen

        mechanisms.exponential_index = tapped
        return self

    def __exit__(self, *exc) -> None:
        mechanisms.exponential_index = self._real


def _log_probabilities(scores: np.ndarray, factor: float) -> np.ndarray:
    finite = np.isfinite(scores)
    z = np.full(scores.shape, -np.inf)
    z[finite] = factor * (scores[finite] - scores[finite].max())
    return z - np.log(np.exp(z[finite]).sum())


def exponential_problems(draws_d: list, draws_d2: list) -> list[str]:
    """The charged exponential draws of a run and its forced replay against their charges.

    Each draw must follow an ``exponential`` charge and use at most ε/(2Δ) of it; no two draws
    may start from one stream state; on the neighbour the same draws must happen, no finite
    utility may move by more than the charged Δ, and for every candidate i,
    |ln P_D(i) − ln P_D′(i)| ≤ ε at the factor actually used (the release's e^ε bound)."""
    problems = []
    states = [d.state for d in draws_d]
    if len(set(states)) < len(states):
        problems.append("two exponential draws started from the same stream state")
    for k, d in enumerate(draws_d):
        c = d.charge
        if c is None or c.mechanism != "exponential":
            problems.append(f"exponential draw {k} follows no exponential charge ({c})")
            continue
        limit = nano_to_epsilon(c.epsilon_nano) / (2.0 * c.sensitivity)
        if d.factor > limit * (1 + 1e-12):
            problems.append(f"{c.label}: drawn at factor {d.factor:.12g} > ε/(2Δ) = "
                            f"{limit:.12g}")
    if len(draws_d) != len(draws_d2):
        return problems + [f"{len(draws_d)} exponential draws on D, {len(draws_d2)} on D′"]
    for d, d2 in zip(draws_d, draws_d2):
        c = d.charge
        if c is None:
            continue
        finite = np.isfinite(d.scores)
        moved = float(np.abs(d.scores[finite] - d2.scores[finite]).max(initial=0.0))
        if moved > c.sensitivity:
            problems.append(f"{c.label}: a utility moved by {moved:g} > Δ = {c.sensitivity:g}")
        ratio = float(np.abs(_log_probabilities(d.scores, d.factor)[finite]
                             - _log_probabilities(d2.scores, d2.factor)[finite]).max())
        eps = nano_to_epsilon(c.epsilon_nano)
        if ratio > eps * (1 + 1e-9):
            problems.append(f"{c.label}: a choice is e^{ratio:.6g} times likelier on one "
                            f"neighbour (charged ε = {eps:g})")
    return problems


# =========================================================================== one replay

@dataclass
class Replay:
    """A run on D and its forced replay on D′, with everything recorded."""

    result_d: object
    result_d2: object
    accountant_d: PrivacyAccountant
    accountant_d2: PrivacyAccountant
    recorder_d: NoiseRecorder
    recorder_d2: NoiseRecorder
    taps_d: KernelTaps
    taps_d2: KernelTaps
    exponential_d: ExponentialTaps
    exponential_d2: ExponentialTaps
    steepness: float | None = None


def run_replay(run: Callable, data_d, data_d2, total_nano: int, seed: int) -> Replay:
    """``run(data, rng, accountant)`` on D (recorded) and on D′ (forced to D's outputs)."""
    out = []
    play = play_draws = None
    for data in (data_d, data_d2):
        accountant = PrivacyAccountant(total_nano)
        with NoiseRecorder(play=play) as recorder, KernelTaps() as taps, \
                ExponentialTaps(accountant, play=play_draws) as draws:
            result = run(data, np.random.default_rng(seed), accountant)
        out.append((result, accountant, recorder, taps, draws))
        play, play_draws = recorder.events, draws.draws
    (r1, a1, rec1, t1, x1), (r2, a2, rec2, t2, x2) = out
    return Replay(r1, r2, a1, a2, rec1, rec2, t1, t2, x1, x2)


def public_release(result) -> dict:
    """What a run releases, without its id, time and the owner's diagnostics."""
    d = result.to_dict()
    for key in ("run_id", "created_at", "diagnostics", "timings", "seconds"):
        d.pop(key, None)
    return d


def assert_private_replay(replay: Replay, name: str) -> None:
    """Every replay check of the module docstring, with messages naming the release."""
    events = replay.recorder_d.events
    assert events, f"{name}: no noisy release was recorded"
    draws, draws2 = replay.exponential_d.draws, replay.exponential_d2.draws
    problems = (calibration_problems(events, replay.accountant_d.calls)
                + redraw_problems(events) + shared_streams(events)
                + kernel_problems(replay.taps_d, replay.accountant_d, events,
                                  replay.steepness, draws)
                + exponential_problems(draws, draws2))
    assert not problems, f"{name}: " + "; ".join(problems) + f" {MSG}"
    for diverged in (replay.recorder_d2.diverged, replay.exponential_d2.diverged):
        assert diverged is None, (
            f"{name}: on the neighbour, with every release forced to D's, the run took "
            f"another path — {diverged} (a choice before the noise reads the data)")
    try:
        diffs = replay_differences(events, replay.recorder_d2.events)
    except ParameterError as exc:
        raise AssertionError(f"{name}: {exc}") from None
    over = [d for d in diffs if d.exceeds]
    assert not over, f"{name}: realised sensitivity above the declared Δ: {over}"
    charged = [(c.mechanism, c.label, c.epsilon_nano, c.sensitivity, c.parallel)
               for c in replay.accountant_d.calls]
    charged2 = [(c.mechanism, c.label, c.epsilon_nano, c.sensitivity, c.parallel)
                for c in replay.accountant_d2.calls]
    assert charged == charged2, (
        f"{name}: the charges differ between D and the coupled D′ (data-dependent choice): "
        f"{[x for x in charged if x not in charged2]} vs "
        f"{[x for x in charged2 if x not in charged]}")
    assert public_release(replay.result_d) == public_release(replay.result_d2), (
        f"{name}: D and D′ gave different releases from the same released noisy values, so "
        "something released reads the data without noise")


# =========================================================================== designs

#: Two-view data with one Boolean attribute per view, so every tree miner's depth-1 trees
#: and Serenade's one literal pair are forced (the draws still run, from the same stream on
#: D and D′). D′ adds a row a ∧ ¬b.
TWO_VIEW_CELLS = {(1, 1): 15, (0, 0): 15, (0, 1): 5, (1, 0): 4}


def two_view(extra_row: bool) -> TwoViewDataset:
    schema = Schema("replay", (Attribute("a", 0, BOOLEAN), Attribute("b", 1, BOOLEAN)),
                    (ViewSpec("l"), ViewSpec("r")), grid_bins=1, public_demo=True)
    cells = dict(TWO_VIEW_CELLS)
    if extra_row:
        cells[(1, 0)] += 1
    a = np.concatenate([np.full(n, x, dtype=float) for (x, _), n in cells.items()])
    b = np.concatenate([np.full(n, y, dtype=float) for (_, y), n in cells.items()])
    return TwoViewDataset.from_arrays(schema, a[None, :], b[None, :])


def _redescription_runner(params: SerenadeParams | TreeParams):
    total = sum(s.epsilon_nano for s in tree_plan(params))

    def run(data, rng, accountant):
        return mine(data, params, rng=rng, accountant=accountant)
    return run, total


#: Serenade runs three rounds: ε_ext (and CS's ε_Q) then split into slots that differ by one
#: nano-ε, so a draw scored with any slot but the role's smallest is seen by the replay.
TREE_PARAMS = {
    MCMCTREEPAIR: TreeParams(algorithm=MCMCTREEPAIR, epsilon=1.0, in_tr=2, depth=1,
                               mc_iter=10, tree_score=COUNT_SCORE),
    ALTMCMC: TreeParams(algorithm=ALTMCMC, epsilon=1.0, in_tr=2, rm_iter=1, depth=1,
                          mc_iter=10),
    ALTEXPM: TreeParams(algorithm=ALTEXPM, epsilon=1.0, in_tr=2, rm_iter=1, depth=2),
    SERENADE_ES: SerenadeParams(algorithm=SERENADE_ES, epsilon=1.0, init_pairs=1, es_rounds=3,
                              budget_ext=0.1, min_jaccard=0.0, max_pvalue=1.0, min_support=0.0,
                              max_support=1.0),
    SERENADE_CS: SerenadeParams(algorithm=SERENADE_CS, epsilon=1.0, init_pairs=1, cs_rounds=3,
                              budget_ext=0.1, min_acc=0.0, min_jaccard=0.0, max_pvalue=1.0,
                              min_support=0.0, max_support=1.0),
}

#: Queries over a 4 × 4 grid of 1° cells: the left view holds a and the longitude, the right
#: view b and the latitude. D′ adds a row a ∧ b at (1, 1), in a cell empty on D.
QUERY_ROWS = [(1, 1, 0.5, 0.5)] * 6 + [(1, 0, 2.5, 0.5)] * 4 + [(0, 1, 0.5, 2.5)] * 5 \
    + [(0, 0, 2.5, 2.5)] * 7 + [(1, 1, 3.5, 3.5)] * 3
QUERY_EXTRA = (1, 1, 1.0, 1.0)


def query_data(extra_row: bool) -> TwoViewDataset:
    schema = Schema("replay_map",
                    (Attribute("a", 0, BOOLEAN), Attribute("lon", 0, NUMERIC, domain=(0, 4)),
                     Attribute("b", 1, BOOLEAN), Attribute("lat", 1, NUMERIC, domain=(0, 4))),
                    (ViewSpec("l"), ViewSpec("r")), grid_bins=4, public_demo=True,
                    location=Location("lon", "lat", 1.0, (0.0, 4.0), (0.0, 4.0)))
    rows = np.array(QUERY_ROWS + [QUERY_EXTRA] * int(extra_row), dtype=float).T
    return TwoViewDataset.from_arrays(schema, rows[[0, 2]], rows[[1, 3]])


QUERY_PARAMS = CustomQueryParams(epsilon=1.0, left_query="[a]", right_query="[b]")
MAP_PARAMS = RegionMapParams(algorithm=REGION_MAP, epsilon=1.0, left_query="[a]",
                             right_query="[b]")

#: Three declared items; D′ adds a record holding all three twice (length 6, longer than
#: any record of D), which moves every item's support and the length histograms.
SEQUENCE_RECORDS = [[0, 1]] * 10 + [[0, 2]] * 8 + [[1, 2]] * 6 + [[0]] * 5 + [[0, 1, 2]] * 4
SEQUENCE_EXTRA = [0, 1, 2, 0, 1, 2]


def sequences(extra_record: bool) -> SequenceDataset:
    schema = SequenceSchema("replay", ("x", "y", "z"), l1=6, public_demo=True)
    return SequenceDataset.from_lists(schema,
                                      SEQUENCE_RECORDS + [SEQUENCE_EXTRA] * int(extra_record))


SEQUENCE_PARAMS = {
    PFS2: SequenceMiningParams(algorithm=PFS2, epsilon=2.0, theta=0.2),
    PFS2_BASELINE: SequenceMiningParams(algorithm=PFS2_BASELINE, epsilon=2.0, theta=0.2),
}

#: Three numeric features in [0, 1] and a label; D′ adds a class-0 row at (1, 1, 1), the corner
#: that moves the sums and second moments the most.
N_TABLE = 12


def table(extra_row: bool):
    schema = schema_from_dict({"name": "replay", "public_demo": True,
                               "label": {"name": "y", "classes": [0, 1]},
                               "features": [{"name": "a", "type": "numeric", "bounds": [0, 1]},
                                            {"name": "b", "type": "numeric",
                                             "bounds": [0, 1]},
                                            {"name": "c", "type": "numeric",
                                             "bounds": [0, 1]}]})
    grid = np.linspace(0.1, 0.9, N_TABLE)
    frame = pd.DataFrame({"y": [0, 1] * (N_TABLE // 2), "a": grid, "b": grid[::-1],
                          "c": np.roll(grid, 5)})
    if extra_row:
        frame = pd.concat([frame, pd.DataFrame({"y": [0], "a": [1.0], "b": [1.0],
                                                "c": [1.0]})], ignore_index=True)
    return table_from_frame(frame, schema)


#: The tree structure (the default without owner groups) needs more rows per edge-table
#: cell: 60 rows, two numeric features and one categorical, ε = 40 (K = 4 coarse bins, the
#: fewest the tree is built with, MIN_TREE_BINS; two exponential-mechanism rounds, the
#: second with the candidate that stops the forest). In each
#: class b follows a and c follows a's half, so the second round often picks an edge too
#: (on the first seed: two edge tables). Class 0 lives in the lower half of a and b and on
#: levels u, v; D′ adds a class-0 row at the corner (1, 1, "w"), a code of each feature that
#: class 0 never has: it moves one cell of every marginal, pair table and edge table, and
#: moves the class's true marginals as far as one record can (so a utility that read them
#: instead of the released ones would move by ≈ 4, not 1).
N_TREE = 60


def tree_table(extra_row: bool):
    schema = schema_from_dict({"name": "replay_tree", "public_demo": True,
                               "label": {"name": "y", "classes": [0, 1]},
                               "features": [{"name": "a", "type": "numeric", "bounds": [0, 1]},
                                            {"name": "b", "type": "numeric",
                                             "bounds": [0, 1]},
                                            {"name": "c", "type": "categorical",
                                             "levels": ["u", "v", "w"]}]})
    half = N_TREE // 2
    low, high = np.linspace(0.05, 0.45, half), np.linspace(0.55, 0.95, half)
    frame = pd.DataFrame({"y": [0] * half + [1] * half, "a": np.r_[low, high],
                          "b": np.r_[low[::-1], high],
                          "c": np.r_[np.where(low < 0.25, "u", "v"),
                                     np.where(high < 0.75, "v", "w")]})
    if extra_row:
        frame = pd.concat([frame, pd.DataFrame({"y": [0], "a": [1.0], "b": [1.0],
                                                "c": ["w"]})], ignore_index=True)
    return table_from_frame(frame, schema)


_NO_GROUPS = SynthesisParams(algorithm=MCGEN, epsilon=2.0, structure=CORRELATION_GROUPS)
SYNTHESIS_PARAMS = {
    MCGEN: SynthesisParams(algorithm=MCGEN, epsilon=2.0, feature_groups=[["a", "b"], ["c"]]),
    # no owner groups: the run decides from N̂ whether to release correlations, with the
    # limit set where that decision would flip between N = 12 and N = 13 rows
    f"{MCGEN}-groups": replace(_NO_GROUPS, max_correlation_noise=correlation_noise(
        _NO_GROUPS, 3, N_TABLE + 0.5)),
    FLOOR: SynthesisParams(algorithm=FLOOR, epsilon=2.0),
    MCGEN_TREE: SynthesisParams(algorithm=MCGEN, epsilon=40.0, structure=TREE),
}


def _runner(name: str):
    """(run, D, D′, total nano-ε) of the named replay case."""
    if name in TREE_PARAMS:
        run, total = _redescription_runner(TREE_PARAMS[name])
        return run, two_view(False), two_view(True), total
    if name == CUSTOM_QUERY:
        return (lambda d, rng, acc: run_custom_query(d, QUERY_PARAMS, rng=rng, accountant=acc),
                query_data(False), query_data(True), int(1e9))
    if name == REGION_MAP:
        return (lambda d, rng, acc: run_region_map(d, MAP_PARAMS, rng=rng, accountant=acc),
                query_data(False), query_data(True), int(1e9))
    if name in SEQUENCE_PARAMS:
        params = SEQUENCE_PARAMS[name]
        return (lambda d, rng, acc: mine_frequent_sequences(d, params, rng=rng, accountant=acc),
                sequences(False), sequences(True),
                sum(s.epsilon_nano for s in sequence_plan(params)))
    params = SYNTHESIS_PARAMS[name]
    design = tree_table if name == MCGEN_TREE else table
    return (lambda d, rng, acc: synthesize(d, params, rng=rng, accountant=acc),
            design(False), design(True), sum(s.epsilon_nano for s in synthesis_plan(params)))


REPLAY_CASES = [MCMCTREEPAIR, ALTMCMC, ALTEXPM, SERENADE_ES, SERENADE_CS, CUSTOM_QUERY,
                REGION_MAP, PFS2, PFS2_BASELINE, MCGEN, f"{MCGEN}-groups", MCGEN_TREE, FLOOR]


def replay_case(name: str, seed: int | None = None) -> Replay:
    run, d, d2, total = _runner(name)
    replay = run_replay(run, d, d2, total, R.BASE_SEED if seed is None else seed)
    if name in (SERENADE_ES, SERENADE_CS):
        replay.steepness = TREE_PARAMS[name].steepness
    return replay


def check_replay(name: str) -> None:
    """The detector the mutation tests call: one family's replay on two seeds."""
    for seed in (R.BASE_SEED, R.BASE_SEED + 1):
        assert_private_replay(replay_case(name, seed), f"{name} (seed {seed})")


@pytest.mark.parametrize("name", REPLAY_CASES)
def test_replay_of_every_family_is_private(name):
    check_replay(name)


# ---------------------------------------------------------------- the released tables

def check_query_table_is_the_release() -> None:
    """The custom query releases exactly the recorded 4 noisy cells (nothing added after the
    draw, no cell copied from another), and the map exactly its recorded histogram."""
    for name in (CUSTOM_QUERY, REGION_MAP):
        replay = replay_case(name)
        (event,) = replay.recorder_d.events
        table_ = np.asarray(replay.result_d.extractions[0].noisy_table, dtype=float)
        assert np.array_equal(table_.ravel(), np.asarray(event.output, dtype=float).ravel()), (
            f"{name}: the released table is not the mechanism's output {event.output}")


def test_query_and_map_release_exactly_the_recorded_noise():
    check_query_table_is_the_release()


# ---------------------------------------------------------------- the recorder itself

def test_the_recorder_is_off_by_default_and_refuses_to_nest():
    assert mechanisms._recorder is None
    with NoiseRecorder() as rec:
        assert mechanisms._recorder is rec
        with pytest.raises(ParameterError, match="already recording"):
            NoiseRecorder().__enter__()
    assert mechanisms._recorder is None


def test_the_replay_checks_see_a_too_small_scale_a_reused_stream_and_a_branch():
    """Each check fails on a mechanism built to fail it (the catalogue of
    tests/support/privacy_mutants.py plants such bugs in the real miners)."""
    rng = np.random.default_rng(1)
    acc = PrivacyAccountant(10**10)
    with NoiseRecorder() as rec:
        mechanisms.discrete_laplace([5, 6], sensitivity=1, epsilon_nano=2 * 10**9, rng=rng,
                                    accountant=_ChargeHalf(acc), label="x")
        frozen = np.random.default_rng(2)
        for label in ("y", "z"):
            mechanisms.discrete_laplace([1], sensitivity=1, epsilon_nano=10**9,
                                        rng=_copy(frozen), accountant=acc, label=label)
    assert any("charged" in p for p in calibration_problems(rec.events, acc.calls))
    assert shared_streams(rec.events)
    with NoiseRecorder(play=rec.events) as again:
        mechanisms.discrete_laplace([5, 6, 7], sensitivity=1, epsilon_nano=2 * 10**9,
                                    rng=np.random.default_rng(1), accountant=acc, label="x")
    assert again.diverged and "recorded run made" in again.diverged
    with pytest.raises(ParameterError, match="reads the data"):
        replay_differences(rec.events, again.events)


class _ChargeHalf:
    def __init__(self, accountant):
        self.accountant = accountant

    def spend(self, mechanism, label, epsilon_nano, sensitivity, parallel=1):
        return self.accountant.spend(mechanism, label, epsilon_nano // 2, sensitivity, parallel)


def _copy(rng):
    import copy
    return copy.deepcopy(rng)


# =========================================================================== checks by family

#: The cheap detectors of each family (fixture-free callables), what
#: tests/dpcore/privacy/test_privacy_mutants.py runs under every planted bug of that family.
DETECTORS: dict[str, list[Callable[[], None]]] = {
    name: [(lambda n=name: check_replay(n))] for name in REPLAY_CASES}
for _name in (CUSTOM_QUERY, REGION_MAP):
    DETECTORS[_name].append(check_query_table_is_the_release)


# ---------------------------------------------------------------- the tree's edge choices

def test_the_tree_case_builds_the_tree_and_its_draws_are_checked():
    """The MC-GEN tree replay really exercises the tree on both seeds: two edge choices drawn
    by the charged exponential mechanism (forced and compared on D′; the second with the stop
    candidate), one or two edge tables, two on at least one seed."""
    tables = []
    for seed in (R.BASE_SEED, R.BASE_SEED + 1):
        replay = replay_case(MCGEN_TREE, seed)
        draws = replay.exponential_d.draws
        assert len(draws) == 2 == len(replay.exponential_d2.draws)
        assert all(d.charge.label.startswith("tree edge") for d in draws)
        assert [d.scores.size for d in draws] == [3, 4]        # 3 pairs, then + stop
        tables.append(sum("tree edge table" in e.label for e in replay.recorder_d.events))
        assert len(replay.result_d.groups) == tables[-1]      # one entry per released edge
    assert min(tables) >= 1 and max(tables) == 2, tables


def test_the_exponential_checks_see_a_hotter_draw_and_a_utility_moved_too_far():
    """``exponential_problems`` on hand-made draws: a factor above ε/(2Δ), utilities that
    move by 2 (one up, one down) with Δ = 1, and the e^ε ratio that this breaks."""
    acc = PrivacyAccountant(10**10)
    acc.spend("exponential", "x", 10**9, 1.0)
    charge = acc.calls[-1]
    u = np.array([0.0, 1.0, -np.inf])
    ok = ExponentialDraw(u, 0.5, 1, charge, "s")
    assert exponential_problems([ok], [replace(ok, scores=u + [1.0, 0.0, 0.0])]) == []
    hot = replace(ok, factor=1.0)
    assert any("factor" in p for p in exponential_problems([hot], [hot]))
    far = replace(ok, scores=u + [2.0, -2.0, 0.0])
    problems = exponential_problems([ok], [far])
    assert any("moved by 2" in p for p in problems)
    assert any("likelier" in p for p in problems)
