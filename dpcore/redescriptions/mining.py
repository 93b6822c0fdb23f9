"""The three miners: MCMCTreePair, AltMCMC, AltExpM (paper Alg. 1 and 4).

:func:`mine` is the one entry point. It spends exactly the budget plan of
``params.plan_budget`` through a :class:`PrivacyAccountant`: every tree and
every noisy table is charged before its randomness is drawn. Callers that use
the ledger charge the plan's total *before* calling :func:`mine` and pass an
accountant capped at that charge.

Loops over trials stay in Python with one kernel call per tree, so a caller can
show progress between calls (numba cannot call back into a UI).
"""

from __future__ import annotations

import time
import uuid
import weakref
from collections.abc import Callable
from contextlib import contextmanager
from datetime import UTC, datetime

import numpy as np

from dpcore import __version__
from dpcore.data.dataset import TwoViewDataset
from dpcore.data.schema import NUMERIC
from dpcore.errors import DataError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.mechanisms import noisy_counts
from dpcore.privacy.randomness import secure_generator
from dpcore.redescriptions.coding import (
    CodedView,
    code_dataset_strict,
    code_view_faithful,
    code_view_segments,
)
from dpcore.redescriptions.extract import extract_redescriptions
from dpcore.redescriptions.params import (
    BudgetSlot,
    RedescriptionParams,
    SerenadeParams,
    TreeParams,
    family_params,
    plan_budget,
)
from dpcore.redescriptions.results import ExtractionRecord, OwnerDiagnostics, RunResult
from dpcore.redescriptions.serenade.miner import mine_serenade
from dpcore.redescriptions.targets import make_target, pick_attribute
from dpcore.redescriptions.trees import (
    Tree,
    build_expmech_tree,
    child_bitsets,
    leaf_classes,
    sample_mcmc_tree,
    sample_tree_pair,
    true_leaf_table,
)
from dpcore.registry import (
    ALGORITHM_LABELS,
    ALTEXPM,
    COUNT_SCORE,
    FAITHFUL,
    MCMCTREEPAIR,
    STRICT,
)

Progress = Callable[[float, str], None]
TRACE_POINTS = 2000

_strict_codes: dict[int, tuple[CodedView, CodedView]] = {}


def strict_coding(dataset: TwoViewDataset) -> tuple[CodedView, CodedView]:
    """Both views coded on the public grid, computed once per dataset object."""
    key = id(dataset)
    if key not in _strict_codes:
        _strict_codes[key] = code_dataset_strict(dataset)
        weakref.finalize(dataset, _strict_codes.pop, key, None)
    return _strict_codes[key]


class _Run:
    """State of one run: budget slots, released trees/extractions, diagnostics."""

    def __init__(self, dataset, params: TreeParams, rng, accountant, progress):
        self.dataset, self.params, self.rng = dataset, params, rng
        self.accountant, self.progress = accountant, progress or (lambda f, m: None)
        self.slots = {(s.trial, s.step, s.role): s for s in plan_budget(params)}
        self.trees: list = []
        self.extractions: list[ExtractionRecord] = []
        self.redescriptions: list = []
        self.traces: dict[str, list[float]] = {}
        self.faithful = params.mode == FAITHFUL
        self.phase_seconds = {"prepare": 0.0, "trees": 0.0, "extract": 0.0}
        self.mcmc_stats = np.zeros(1, dtype=np.int64)
        self.mcmc_iterations = 0
        with self.phase("prepare"):
            self.strict_codes = None if self.faithful else strict_coding(dataset)
            if self.strict_codes and params.algorithm != ALTEXPM:
                for coded in self.strict_codes:
                    child_bitsets(coded)

    @contextmanager
    def phase(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.phase_seconds[name] += time.perf_counter() - start

    def slot(self, trial: int, step: int, role: str) -> BudgetSlot:
        return self.slots[(trial, step, role)]

    def coded(self, view: int) -> CodedView:
        """Strict: the public-grid coding. Faithful: fresh data-derived thresholds per tree."""
        if self.faithful:
            return code_view_faithful(self.dataset.views[view], self.rng)
        return self.strict_codes[view]

    def keep_trace(self, label: str, trace: np.ndarray) -> None:
        self.mcmc_iterations += int(trace.size)
        step = max(1, int(np.ceil(trace.size / TRACE_POINTS)))
        self.traces[label] = [float(x) for x in trace[::step]]

    def release_tree(self, tree: Tree, trial: int, step: int) -> int:
        self.trees.append(tree.to_record(len(self.trees), trial, step))
        return len(self.trees) - 1

    def extract(self, tree_a: Tree, id_a: int, tree_b: Tree, id_b: int, trial: int,
                step: int) -> None:
        """extractReds (Alg. 6): charge, draw the noisy leaf×leaf counts, post-process."""
        (left, lid), (right, rid) = sorted([(tree_a, id_a), (tree_b, id_b)],
                                           key=lambda p: p[0].view)
        with self.phase("extract"):
            self._extract(left, lid, right, rid, trial, step)

    def _extract(self, left: Tree, lid: int, right: Tree, rid: int, trial: int,
                 step: int) -> None:
        table = true_leaf_table(left, right)
        budget = self.slot(trial, step, "extract").epsilon_nano
        label = f"trial {trial} step {step} extraction"
        if self.faithful:
            third = budget // 3
            noisy_table = noisy_counts(table, kind="continuous", sensitivity=1,
                                       epsilon_nano=third, rng=self.rng,
                                       accountant=self.accountant, label=label + " table")
            noisy_left = noisy_counts(table.sum(axis=1), kind="continuous", sensitivity=1,
                                      epsilon_nano=third, rng=self.rng,
                                      accountant=self.accountant, label=label + " left")
            noisy_right = noisy_counts(table.sum(axis=0), kind="continuous", sensitivity=1,
                                       epsilon_nano=budget - 2 * third, rng=self.rng,
                                       accountant=self.accountant, label=label + " right")
            noisy_n = float(np.sum(noisy_left))
        else:
            noisy_table = noisy_counts(table, kind=self.params.noise, sensitivity=1,
                                       epsilon_nano=budget, rng=self.rng,
                                       accountant=self.accountant, label=label)
            noisy_left = noisy_table.sum(axis=1)
            noisy_right = noisy_table.sum(axis=0)
            noisy_n = float(noisy_table.sum())
        noisy_table = np.asarray(noisy_table, dtype=np.float64)
        index = len(self.extractions)
        self.extractions.append(ExtractionRecord(
            index, lid, rid, trial, step,
            tuple(tuple(float(x) for x in row) for row in noisy_table),
            tuple(float(x) for x in noisy_left), tuple(float(x) for x in noisy_right),
            float(noisy_n)))
        reds = extract_redescriptions(
            noisy_table,
            noisy_left=np.asarray(noisy_left, dtype=np.float64) if self.faithful else None,
            noisy_right=np.asarray(noisy_right, dtype=np.float64) if self.faithful else None,
            noisy_n=noisy_n if self.faithful else None,
            params=self.params, left_tree=self.trees[lid], right_tree=self.trees[rid],
            left_tree_index=lid, right_tree_index=rid, trial=trial, step=step,
            extraction=index, first_id=len(self.redescriptions))
        self.redescriptions.extend(reds)


def tree_depth(params) -> int:
    """Split levels of a tree: ``depth``; faithful mode ``max(depth − 1, 1)`` (the authors'
    code counts the root as level 1 and makes a node at level ``depth`` a leaf, so depth 4
    means 3 splits on a path; its depth 1, a lone root, would give nothing, so faithful
    depth 1 keeps one split; docs/ALGORITHMS.md §4.3)."""
    return max(params.depth - 1, 1) if params.mode == FAITHFUL else params.depth


def _build_tree(run: _Run, view: int, classes, n_classes, trial, step) -> Tree:
    p = run.params
    budget = run.slot(trial, step, "tree").epsilon_nano
    label = f"trial {trial} step {step} tree ({'LR'[view]})"
    with run.phase("prepare"):
        coded = run.coded(view)
    with run.phase("trees"):
        if p.algorithm == ALTEXPM:
            return build_expmech_tree(view, coded, classes, n_classes, tree_depth(p), budget,
                                      run.rng, run.accountant, label)
        tree, trace = sample_mcmc_tree(view, coded, classes, n_classes, tree_depth(p), budget,
                                       run.rng, run.accountant, label, mc_iter=p.mc_iter,
                                       faithful=run.faithful, sigma=p.sigma,
                                       window=p.sigma_window, stats=run.mcmc_stats)
    run.keep_trace(label, trace)
    return tree


def _mine_alternating(run: _Run) -> None:
    """createRedsAlt (Alg. 1): per initial target, one tree on the other view, then
    RMIter × (tree on the other view with the previous tree's leaves as classes,
    extraction between the last two trees)."""
    p = run.params
    for trial in range(p.in_tr):
        run.progress(trial / p.in_tr, f"trial {trial + 1} of {p.in_tr}: initial target")
        view, attr = pick_attribute(run.dataset, run.rng)
        target = make_target(run.dataset, view, attr, p.mode)
        if target is None:
            continue
        prev = _build_tree(run, 1 - view, target.classes, target.n_classes, trial, 0)
        prev_id = run.release_tree(prev, trial, 0)
        for step in range(1, p.rm_iter + 1):
            run.progress((trial + step / (p.rm_iter + 1)) / p.in_tr,
                         f"trial {trial + 1} of {p.in_tr}: alternation {step} of {p.rm_iter}")
            classes, n_classes = leaf_classes(prev)
            tree = _build_tree(run, 1 - prev.view, classes, n_classes, trial, step)
            tree_id = run.release_tree(tree, trial, step)
            run.extract(prev, prev_id, tree, tree_id, trial, step)
            prev, prev_id = tree, tree_id


def _mine_tree_pairs(run: _Run) -> None:
    """MCMCTreePair (Alg. 4): per trial, an initial target (no attribute repeats while
    unused ones remain), one jointly sampled tree pair, one extraction."""
    p = run.params
    used: set = set()
    for trial in range(p.in_tr):
        run.progress(trial / p.in_tr, f"trial {trial + 1} of {p.in_tr}: sampling a tree pair")
        view, attr = pick_attribute(run.dataset, run.rng, exclude=used)
        used.add((view, attr))
        target = make_target(run.dataset, view, attr, p.mode)
        if target is None:
            continue
        first, second = 1 - view, view
        label = f"trial {trial} tree pair"
        with run.phase("prepare"):
            coded_first, coded_second = run.coded(first), run.coded(second)
        with run.phase("trees"):
            t1, t2, trace = sample_tree_pair(
                (first, second), coded_first, coded_second, target.classes,
                target.n_classes, tree_depth(p), run.slot(trial, 0, "tree").epsilon_nano, run.rng,
                run.accountant, label, mc_iter=p.mc_iter, faithful=run.faithful,
                sigma=p.sigma, window=p.sigma_window, stats=run.mcmc_stats,
                count_scale=p.tree_score == COUNT_SCORE and not run.faithful)
        run.keep_trace(label, trace)
        id1 = run.release_tree(t1, trial, 0)
        id2 = run.release_tree(t2, trial, 0)
        run.extract(t1, id1, t2, id2, trial, 0)


def mine(dataset: TwoViewDataset, params: RedescriptionParams, *,
         rng: np.random.Generator | None = None, accountant: PrivacyAccountant | None = None,
         run_id: str | None = None, seed: int | None = None,
         progress: Progress | None = None) -> RunResult:
    """Run one DP redescription miner on a dataset.

    Parameters
    ----------
    dataset : TwoViewDataset
        Private data; only DP releases leave this function (plus owner-only
        ``diagnostics``).
    params : MiningParams, TreeParams or SerenadeParams
        Validated here; ``plan_budget(params)`` is what gets spent. The miner reads the
        family's type (:func:`~dpcore.redescriptions.params.family_params`); the result
        stores ``params.to_dict()``.
    rng : numpy.random.Generator, optional
        Source of all randomness. Default: fresh ChaCha20 keyed from the OS (real releases).
        Pass a seeded generator only in tests and labelled demos, and give the
        ``seed`` so the result records it.
    accountant : PrivacyAccountant, optional
        Caps the run's spending (normally at what the ledger charged). Default:
        one capped at the plan's total.
    progress : callable(fraction, message), optional
        Called between kernel calls.

    Returns
    -------
    RunResult
        Everything released, the exact mechanism calls, and (apart) diagnostics.
    """
    params.validate()
    plan = plan_budget(params)
    total = sum(s.epsilon_nano for s in plan)
    if accountant is None:
        accountant = PrivacyAccountant(total)
    if rng is None:
        rng = secure_generator()   # no generator given: the private-data source
    stored = params.to_dict()
    params = family_params(params)
    if params.is_serenade:
        return _mine_serenade(dataset, params, stored, rng, accountant, run_id, seed,
                              progress)
    run = _Run(dataset, params, rng, accountant, progress)
    if params.algorithm == MCMCTREEPAIR:
        _mine_tree_pairs(run)
    else:
        _mine_alternating(run)
    run.progress(1.0, f"{ALGORITHM_LABELS[params.algorithm]}: "
                      f"{len(run.redescriptions)} redescriptions")
    return RunResult(
        run_id=run_id or uuid.uuid4().hex, dataset=dataset.schema.name,
        algorithm=params.algorithm, mode=params.mode, params=stored,
        version=__version__, created_at=datetime.now(UTC).isoformat(),
        epsilon_nano=accountant.spent_nano, redescriptions=run.redescriptions,
        trees=run.trees, extractions=run.extractions,
        mechanism_calls=accountant.to_records(), seed=seed,
        diagnostics=OwnerDiagnostics(score_traces=run.traces,
                                     phase_seconds=run.phase_seconds,
                                     mcmc_iterations=run.mcmc_iterations,
                                     mcmc_rows_touched=int(run.mcmc_stats[0])))


def _mine_serenade(dataset, params: SerenadeParams, stored: dict, rng, accountant, run_id,
                   seed, progress) -> RunResult:
    started = time.perf_counter()
    coded = (strict_coding(dataset) if params.mode == STRICT
             else tuple(code_view_segments(v) for v in dataset.views))
    prepare = time.perf_counter() - started
    out = mine_serenade(coded, params, rng, accountant, progress)
    if progress:
        progress(1.0, f"{ALGORITHM_LABELS[params.algorithm]}: "
                      f"{len(out.redescriptions)} redescriptions")
    return RunResult(
        run_id=run_id or uuid.uuid4().hex, dataset=dataset.schema.name,
        algorithm=params.algorithm, mode=params.mode, params=stored,
        version=__version__, created_at=datetime.now(UTC).isoformat(),
        epsilon_nano=accountant.spent_nano, redescriptions=out.redescriptions, trees=[],
        extractions=[], mechanism_calls=accountant.to_records(), seed=seed,
        diagnostics=OwnerDiagnostics(score_traces=out.traces,
                                     phase_seconds={"prepare": prepare, **out.phase_seconds}))


def check_runnable(dataset: TwoViewDataset, params: RedescriptionParams) -> None:
    """Build everything a run needs before its charge, so nothing fails after it.

    Strict mode splits numeric attributes on :meth:`Schema.split_grid` and turns them
    into initial targets with :meth:`Schema.target_edges`: both must give finite,
    increasing cut points for every numeric attribute (data-independent); then the
    views are coded on that grid (cached for the run). Faithful mode reads its grids
    from the data during the run.

    Raises
    ------
    DataError
        Naming the attribute whose public grid cannot be built, or a data problem.
    """
    if params.mode != STRICT:
        return
    schema = dataset.schema
    for attr in schema.attributes:
        if attr.type != NUMERIC:
            continue
        try:
            grids = (schema.split_grid(attr), schema.target_edges(attr))
        except (TypeError, ValueError) as exc:
            raise DataError(f"no public grid can be built for this numeric attribute ({exc}); "
                            "declare a domain [lo, hi] or thresholds", column=attr.name) from None
        for grid in grids:
            if not np.all(np.isfinite(grid)) or np.any(np.diff(grid) <= 0):
                raise DataError("its public grid is not finite and increasing; check the "
                                "declared domain and thresholds", column=attr.name)
    strict_coding(dataset)
