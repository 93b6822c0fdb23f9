"""The three miners: MCMCTreePair, AltMCMC, AltExpM (paper Alg. 1 and 4).

:func:`mine` is the one entry point. It spends exactly the budget plan of
``params.plan_budget`` through a :class:`PrivacyAccountant`: every tree and
every noisy table is charged before its randomness is drawn. Callers that use
the ledger charge the plan's total *before* calling :func:`mine` and pass an
accountant capped at that charge.

The InTr trials are independent: the calling thread picks every trial's initial
target, charges every tree of every trial (in trial order), gives each trial its own
random stream (:func:`~dpcore.privacy.randomness.child_generators`), then runs the
trials' tree kernels — numba, ``nogil`` — in a pool of :func:`trial_threads` plain
threads (no numba threading layer, so it is safe inside Streamlit's script threads),
and finally releases the trees and draws the extractions in trial order. A trial draws
only from its own stream, so the result does not depend on the number of threads.
Progress is reported from the calling thread as trials finish, in trial order (numba
cannot call back into a UI, and Streamlit calls must come from the script's thread).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from dpcore import __version__
from dpcore.data.dataset import TwoViewDataset
from dpcore.data.schema import NUMERIC
from dpcore.errors import DataError, ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.mechanisms import noisy_counts
from dpcore.privacy.randomness import child_generators, secure_generator
from dpcore.redescriptions.coding import (
    CodedView,
    FaithfulCoder,
    code_dataset_strict,
    code_view_segments,
)
from dpcore.redescriptions.extract import extract_redescriptions
from dpcore.redescriptions.params import (
    BudgetSlot,
    RedescriptionParams,
    SerenadeParams,
    TreeParams,
    plan_budget,
)
from dpcore.redescriptions.results import ExtractionRecord, OwnerDiagnostics, RunResult
from dpcore.redescriptions.targets import Target, make_target, pick_attribute
from dpcore.redescriptions.trees import (
    Tree,
    charge_expmech_tree,
    charge_mcmc_tree,
    charge_tree_pair,
    child_bitsets,
    draw_expmech_tree,
    draw_mcmc_tree,
    draw_tree_pair,
    leaf_classes,
    true_leaf_table,
    view_fanout,
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
TRIAL_THREADS_ENV = "DPRM_TRIAL_THREADS"
"""Environment variable: threads that run a tree miner's trials (1 … MAX_TRIAL_THREADS)."""
MAX_TRIAL_THREADS = 8
DEFAULT_TRIAL_THREADS = 2
"""Default pool size, at most the usable cores (the app's target machine has 2)."""


def trial_threads(threads: int | None = None) -> int:
    """Threads that run a tree miner's independent trials.

    Parameters
    ----------
    threads : int, optional
        Explicit count (1 … :data:`MAX_TRIAL_THREADS`). Default: the environment variable
        ``DPRM_TRIAL_THREADS`` if set, else min(usable cores, :data:`DEFAULT_TRIAL_THREADS`).

    Returns
    -------
    int
        The pool size. The result of a run does not depend on it (each trial draws from
        its own stream); only the wall time does.

    Raises
    ------
    ParameterError
        A count (argument or environment variable) that is not an int in range.
    """
    source = "threads"
    if threads is None:
        raw = os.environ.get(TRIAL_THREADS_ENV, "").strip()
        if not raw:
            try:
                cores = len(os.sched_getaffinity(0))
            except AttributeError:      # not on Linux
                cores = os.cpu_count() or 1
            return max(1, min(cores, DEFAULT_TRIAL_THREADS))
        source = TRIAL_THREADS_ENV
        try:
            threads = int(raw)
        except ValueError:
            raise ParameterError(f"{source} must be a whole number of threads "
                                 f"(1 to {MAX_TRIAL_THREADS}); got {raw!r}") from None
    if isinstance(threads, bool) or not isinstance(threads, int) or \
            not 1 <= threads <= MAX_TRIAL_THREADS:
        raise ParameterError(f"{source} must be a whole number of threads "
                             f"(1 to {MAX_TRIAL_THREADS}); got {threads!r}")
    return threads

def strict_coding(dataset: TwoViewDataset) -> tuple[CodedView, CodedView]:
    """Both views coded on the public grid (private: raw-data derived codes)."""
    return code_dataset_strict(dataset)


@dataclass(frozen=True)
class PreparedRun:
    """What :func:`check_runnable` built before the charge, and :func:`mine` consumes.

    Attributes
    ----------
    dataset : TwoViewDataset
        The private data.
    params : RedescriptionParams
        The validated parameters.
    strict_codes : tuple of CodedView or None
        Strict mode: both views coded on the public grid (private codes, public
        thresholds); None in faithful mode, whose grids are read from the data during the run.
    """

    dataset: TwoViewDataset
    params: object
    strict_codes: tuple[CodedView, CodedView] | None


class _Run:
    """State of one run: budget slots, released trees/extractions, diagnostics."""

    def __init__(self, dataset, params: TreeParams, rng, accountant, progress, threads=1,
                 strict_codes=None):
        self.dataset, self.params, self.rng = dataset, params, rng
        self.threads = threads
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
            self.strict_codes = None if self.faithful else (
                strict_codes if strict_codes is not None else strict_coding(dataset))
            # Faithful: what the per-tree coding does not draw is prepared once per view.
            self.faithful_coders = ([FaithfulCoder(v) for v in dataset.views]
                                    if self.faithful else None)
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

    def coded(self, view: int, rng) -> CodedView:
        """Strict: the public-grid coding. Faithful: fresh data-derived thresholds per tree,
        drawn from ``rng`` (the trial's stream)."""
        if self.faithful:
            return self.faithful_coders[view].code(rng)
        return self.strict_codes[view]

    def fanout(self, view: int) -> int:
        """Fanout for a tree's charge records: the strict coding's, or (faithful) the
        view's from its attribute types (``trees.view_fanout``), known before the coding."""
        if self.faithful:
            return view_fanout(self.dataset.views[view])
        return self.strict_codes[view].fanout

    def run_trials(self, trials: list, work: Callable, what: str) -> None:
        """Run ``work(trial)`` for every trial, in a pool of ``self.threads`` threads.

        ``work`` must only read shared state and write its own trial (it runs outside the
        calling thread); progress is reported from the calling thread, in trial order.
        """
        n = len(trials)
        label = ALGORITHM_LABELS[self.params.algorithm]
        self.progress(0.0, f"{label}: {what} for {n} trials")
        with self.phase("trees"):
            if self.threads <= 1 or n <= 1:
                for i, trial in enumerate(trials):
                    work(trial)
                    self.progress((i + 1) / n, f"{label}: trial {i + 1} of {n} done")
                return
            pool = ThreadPoolExecutor(max_workers=min(self.threads, n),
                                      thread_name_prefix="dprm-trial")
            try:
                futures = [pool.submit(work, trial) for trial in trials]
                for i, future in enumerate(futures):
                    future.result()
                    self.progress((i + 1) / n, f"{label}: trial {i + 1} of {n} done")
            finally:
                # On an error or a stopped script: start nothing new; running kernels end
                # on their own (they hold no shared state).
                pool.shutdown(wait=False, cancel_futures=True)

    def keep_trace(self, label: str, trace: np.ndarray) -> None:
        self.mcmc_iterations += int(trace.size)
        step = max(1, int(np.ceil(trace.size / TRACE_POINTS)))
        self.traces[label] = [float(x) for x in trace[::step]]

    def release_tree(self, tree: Tree, trial: int, step: int) -> int:
        self.trees.append(tree.to_record(len(self.trees), trial, step))
        return len(self.trees) - 1

    def extract(self, tree_a: Tree, id_a: int, tree_b: Tree, id_b: int, trial: int,
                step: int, rng) -> None:
        """extractReds (Alg. 6): charge, draw the noisy leaf×leaf counts from ``rng`` (the
        trial's stream), post-process."""
        (left, lid), (right, rid) = sorted([(tree_a, id_a), (tree_b, id_b)],
                                           key=lambda p: p[0].view)
        with self.phase("extract"):
            self._extract(left, lid, right, rid, trial, step, rng)

    def _extract(self, left: Tree, lid: int, right: Tree, rid: int, trial: int,
                 step: int, rng) -> None:
        table = true_leaf_table(left, right)
        budget = self.slot(trial, step, "extract").epsilon_nano
        label = f"trial {trial} step {step} extraction"
        if self.faithful:
            third = budget // 3
            noisy_table = noisy_counts(table, kind="continuous", sensitivity=1,
                                       epsilon_nano=third, rng=rng,
                                       accountant=self.accountant, label=label + " table")
            noisy_left = noisy_counts(table.sum(axis=1), kind="continuous", sensitivity=1,
                                      epsilon_nano=third, rng=rng,
                                      accountant=self.accountant, label=label + " left")
            noisy_right = noisy_counts(table.sum(axis=0), kind="continuous", sensitivity=1,
                                       epsilon_nano=budget - 2 * third, rng=rng,
                                       accountant=self.accountant, label=label + " right")
            # as the authors' code (the paper is silent, docs/ALGORITHMS.md §4.3 item 6):
            # each noisy count truncated toward zero to an integer (Java `int += double`),
            # Ñ the sum of the right marginals clipped at 0
            noisy_table, noisy_left, noisy_right = (
                np.trunc(np.asarray(x, dtype=np.float64))
                for x in (noisy_table, noisy_left, noisy_right))
            noisy_n = float(np.sum(np.maximum(noisy_right, 0.0)))
        else:
            noisy_table = noisy_counts(table, kind=self.params.noise, sensitivity=1,
                                       epsilon_nano=budget, rng=rng,
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


def expmech_shares(params) -> int:
    """Parts a createDTExpMech tree's ε is split into: its split levels; faithful mode
    ``max(depth, 1)`` (the authors' code gives each level ε/``maxTreeDepth`` and splits on
    ``maxTreeDepth − 1`` levels, which is also the paper's per-level ε_t/d; the last part
    is charged and unused, docs/ALGORITHMS.md §4.3 item 1)."""
    return max(params.depth, tree_depth(params)) if params.mode == FAITHFUL \
        else tree_depth(params)


@dataclass
class _Trial:
    """One trial: its target, its own stream, the ε its trees were charged, its output."""

    index: int
    view: int                     # the initial target's view
    target: Target
    rng: np.random.Generator | None = None
    eps: list = field(default_factory=list)       # per tree (step), as charged
    views: list = field(default_factory=list)     # view of each tree (step)
    labels: list = field(default_factory=list)    # accountant label of each tree (step)
    stats: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    trees: list = field(default_factory=list)
    traces: list = field(default_factory=list)    # (label, trace) of each chain


def _pick_targets(run: _Run, *, exclude_used: bool) -> list[_Trial]:
    """Every trial's initial target, drawn in trial order from the run's generator, then one
    child stream per trial (``child_generators``, indexed by trial, so a skipped trial
    shifts no other trial's stream)."""
    p = run.params
    used: set = set()
    trials = []
    for index in range(p.in_tr):
        if exclude_used:
            view, attr = pick_attribute(run.dataset, run.rng, exclude=used)
            used.add((view, attr))
        else:
            view, attr = pick_attribute(run.dataset, run.rng)
        target = make_target(run.dataset, view, attr, p.mode)
        if target is not None:
            trials.append(_Trial(index, view, target))
    streams = child_generators(run.rng, p.in_tr)
    for trial in trials:
        trial.rng = streams[trial.index]
    return trials


def target_tree_view(target_view: int, faithful: bool) -> int:
    """View of the tree that has the initial target's classes (the first tree of an
    alternating chain, T1 of a tree pair): strict mode the view opposite the target's, so the
    tree cannot reproduce the target by splitting on the target attribute itself; faithful
    mode the target's own view, as in the paper's sampleTreePair and in the authors' code of
    all three miners (docs/ALGORITHMS.md §4.3, §7 item 2)."""
    return target_view if faithful else 1 - target_view


def _mine_alternating(run: _Run) -> None:
    """createRedsAlt (Alg. 1): per initial target, one tree with the target classes (on the
    other view; faithful: on the target's view, :func:`target_tree_view`), then
    RMIter × (tree on the other view with the previous tree's leaves as classes,
    extraction between the last two trees).

    Calling thread: targets, then every tree's charge (trial by trial, step by step).
    Pool: each trial's R + 1 trees, in order, from the trial's stream. Calling thread,
    trial order: release the trees, charge and draw each extraction from the trial's
    stream."""
    p = run.params
    trials = _pick_targets(run, exclude_used=False)
    depth = tree_depth(p)
    for trial in trials:
        view = target_tree_view(trial.view, run.faithful)
        for step in range(p.rm_iter + 1):
            label = f"trial {trial.index} step {step} tree ({'LR'[view]})"
            budget = run.slot(trial.index, step, "tree").epsilon_nano
            if p.algorithm == ALTEXPM:
                eps = charge_expmech_tree(run.accountant, label, budget, depth,
                                          run.fanout(view), shares=expmech_shares(p))
            else:
                eps = charge_mcmc_tree(run.accountant, label, budget)
            trial.eps.append(eps)
            trial.views.append(view)
            trial.labels.append(label)
            view = 1 - view

    def work(trial: _Trial) -> None:
        classes, n_classes = trial.target.classes, trial.target.n_classes
        for step, (view, eps, label) in enumerate(zip(trial.views, trial.eps, trial.labels)):
            if step > 0:
                classes, n_classes = leaf_classes(trial.trees[-1])
            coded = run.coded(view, trial.rng)
            if p.algorithm == ALTEXPM:
                tree = draw_expmech_tree(view, coded, classes, n_classes, depth, eps,
                                         trial.rng)
            else:
                tree, trace = draw_mcmc_tree(view, coded, classes, n_classes, depth, eps,
                                             trial.rng, mc_iter=p.mc_iter,
                                             faithful=run.faithful, sigma=p.sigma,
                                             window=p.sigma_window, stats=trial.stats)
                trial.traces.append((label, trace))
            trial.trees.append(tree)

    run.run_trials(trials, work, "building trees")
    for trial in trials:
        _finish_trial(run, trial)
        prev, prev_id = None, None
        for step, tree in enumerate(trial.trees):
            tree_id = run.release_tree(tree, trial.index, step)
            if step > 0:
                run.extract(prev, prev_id, tree, tree_id, trial.index, step, trial.rng)
            prev, prev_id = tree, tree_id


def _finish_trial(run: _Run, trial: _Trial) -> None:
    """The trial's traces and row counters, into the run (calling thread, trial order)."""
    for label, trace in trial.traces:
        run.keep_trace(label, trace)
    run.mcmc_stats += trial.stats


def _mine_tree_pairs(run: _Run) -> None:
    """MCMCTreePair (Alg. 4): per trial, an initial target (no attribute repeats while
    unused ones remain), one jointly sampled tree pair, one extraction.

    Calling thread: targets, then every pair's charge (trial order). Pool: each trial's
    pair chain from the trial's stream. Calling thread, trial order: release the pair,
    charge and draw its extraction from the trial's stream."""
    p = run.params
    trials = _pick_targets(run, exclude_used=True)
    count_scale = p.tree_score == COUNT_SCORE and not run.faithful
    for trial in trials:
        label = f"trial {trial.index} tree pair"
        trial.labels.append(label)
        trial.eps.append(charge_tree_pair(run.accountant, label,
                                          run.slot(trial.index, 0, "tree").epsilon_nano,
                                          count_scale=count_scale, faithful=run.faithful))

    def work(trial: _Trial) -> None:
        first = target_tree_view(trial.view, run.faithful)
        second = 1 - first
        coded_first, coded_second = run.coded(first, trial.rng), run.coded(second, trial.rng)
        t1, t2, trace = draw_tree_pair(
            (first, second), coded_first, coded_second, trial.target.classes,
            trial.target.n_classes, tree_depth(p), trial.eps[0], trial.rng,
            mc_iter=p.mc_iter, faithful=run.faithful, sigma=p.sigma, window=p.sigma_window,
            stats=trial.stats, count_scale=count_scale)
        trial.trees = [t1, t2]
        trial.traces.append((trial.labels[0], trace))

    run.run_trials(trials, work, "sampling tree pairs")
    for trial in trials:
        _finish_trial(run, trial)
        t1, t2 = trial.trees
        id1 = run.release_tree(t1, trial.index, 0)
        id2 = run.release_tree(t2, trial.index, 0)
        run.extract(t1, id1, t2, id2, trial.index, 0, trial.rng)


def mine(dataset: TwoViewDataset, params: RedescriptionParams, *,
         rng: np.random.Generator | None = None, accountant: PrivacyAccountant | None = None,
         run_id: str | None = None, seed: int | None = None,
         progress: Progress | None = None, threads: int | None = None,
         prepared: PreparedRun | None = None) -> RunResult:
    """Run one DP redescription miner on a dataset.

    Parameters
    ----------
    dataset : TwoViewDataset
        Private data; only DP releases leave this function (plus owner-only
        ``diagnostics``).
    params : TreeParams or SerenadeParams
        The algorithm's family type; validated here; ``plan_budget(params)`` is what gets
        spent. The result stores ``params.to_dict()``.
    rng : numpy.random.Generator, optional
        Source of all randomness. Default: fresh ChaCha20 keyed from the OS (real releases).
        Pass a seeded generator only in tests and labelled demos, and give the
        ``seed`` so the result records it.
    accountant : PrivacyAccountant, optional
        Caps the run's spending (normally at what the ledger charged). Default:
        one capped at the plan's total.
    progress : callable(fraction, message), optional
        Called from the calling thread between kernel calls (tree miners: as trials finish,
        in trial order).
    threads : int, optional
        Threads that run the tree miners' trials (:func:`trial_threads`; default the
        ``DPRM_TRIAL_THREADS`` environment variable or min(usable cores, 2)). The result
        does not depend on it.
    prepared : PreparedRun, optional
        What :func:`check_runnable` built for this dataset (the coded views); default:
        built here.

    Returns
    -------
    RunResult
        Everything released, the exact mechanism calls, and (apart) diagnostics.
    """
    params.validate()
    threads = trial_threads(threads)
    plan = plan_budget(params)
    total = sum(s.epsilon_nano for s in plan)
    if accountant is None:
        accountant = PrivacyAccountant(total)
    if rng is None:
        rng = secure_generator()   # no generator given: the private-data source
    stored = params.to_dict()
    codes = prepared.strict_codes if prepared is not None and prepared.dataset is dataset \
        else None
    if params.is_serenade:
        return _mine_serenade(dataset, params, stored, rng, accountant, run_id, seed,
                              progress, codes)
    run = _Run(dataset, params, rng, accountant, progress, threads, strict_codes=codes)
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
                   seed, progress, strict_codes=None) -> RunResult:
    # Imported here: a tree miner's process (a command-line mine) need not load Serenade's
    # modules and define its kernels (issue 19).
    from dpcore.redescriptions.serenade.miner import mine_serenade

    started = time.perf_counter()
    if params.mode == STRICT:
        coded = strict_codes if strict_codes is not None else strict_coding(dataset)
    else:
        coded = tuple(code_view_segments(v) for v in dataset.views)
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


def check_runnable(dataset: TwoViewDataset, params: RedescriptionParams) -> PreparedRun:
    """Build everything a run needs before its charge, so nothing fails after it.

    Strict mode splits numeric attributes on :meth:`Schema.split_grid` and turns them
    into initial targets with :meth:`Schema.target_edges`: both must give finite,
    increasing cut points for every numeric attribute (data-independent); then the
    views are coded on that grid (returned for :func:`mine`). Faithful mode reads its
    grids from the data during the run.

    Raises
    ------
    DataError
        Naming the attribute whose public grid cannot be built, or a data problem.
    """
    if params.mode != STRICT:
        return PreparedRun(dataset, params, None)
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
    return PreparedRun(dataset, params, strict_coding(dataset))
