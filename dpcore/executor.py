"""The one charged-run executor: check, charge, mine, store — for every entry point.

Local runs (:func:`dpcore.runs.charge_and_mine`), batch plans
(:func:`dpcore.distributed.plan.check_plan`), batch workers
(:func:`dpcore.distributed.batch._mine_charged_run`) and the experiment harnesses
(:mod:`dpcore.experiments`) all go through these two steps, so a run is checked, charged and
mined the same way wherever it starts:

1. :func:`prepare_run` — before anything is charged: the parameters' type, their validation
   and the family's budget plan (:func:`check_params`), then the algorithm's ``prepare``
   (public grids, coded views: everything that can fail). What ``prepare`` returns is what
   ``mine`` consumes; nothing else carries state from the check to the miner.
2. :func:`execute_charged` — ``charge()`` (the ledger's one transaction that checks the cap;
   a replayed run id mines nothing), then the algorithm's ``mine`` with an accountant capped
   at exactly the charge (every mechanism spends through it before its noise is drawn),
   then ``store(release, diagnostics)`` before the result is returned. The release
   carries its ``budget`` (charged, spent, returned; :class:`RunBudget`): an algorithm whose
   ``refundable(params)`` is true stops spending on released values only, so the unspent
   part of its charge is returned, by the ledger, in the transaction that stores the
   result. A failure after the charge calls ``fail(message)``: the charge stays spent (the
   noise may have been drawn).

Callers without a ledger pass no ``charge``/``store``: a batch worker (the client charged
before dispatch and stores what the worker returns) and the harnesses (an in-memory sandbox
accountant capped at the plan, NOT a release).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpcore.errors import CountingInterrupted, ParameterError
from dpcore.family import Algorithm, Progress, Release, spec_and_algorithm
from dpcore.privacy.accountant import PrivacyAccountant, RunBudget
from dpcore.registry import AlgorithmSpec

_log = logging.getLogger(__name__)

__all__ = ["CheckedRun", "ExecutedRun", "check_params", "plan_parts", "prepare_run",
           "execute_charged", "run_sandbox", "refundable", "RunBudget"]


def check_params(params) -> tuple[AlgorithmSpec, Algorithm, tuple[int, ...]]:
    """The spec, implementation and budget plan parts (nano-ε) of valid ``params``.

    Raises
    ------
    ParameterError
        Unknown algorithm, parameters of another type than the algorithm's, invalid values,
        or a plan that cannot be split (nothing charged).
    """
    spec, algorithm = spec_and_algorithm(params)
    params_type = algorithm.params_type
    if not isinstance(params, params_type):
        raise ParameterError(f"parameters of {spec.label} must be {params_type.__name__}; "
                             f"got {type(params).__name__}")
    params.validate()
    return spec, algorithm, tuple(s.epsilon_nano for s in algorithm.plan(params))


def plan_parts(params) -> tuple[int, ...]:
    """The budget plan's parts in nano-ε (their sum is what a run charges)."""
    return check_params(params)[2]


def refundable(algorithm: Algorithm, params) -> bool:
    """Whether a run of ``algorithm`` returns what it leaves unspent.

    An algorithm opts in with a ``refundable(params)`` method, true only where its argument
    that every spending decision depends on public parameters and released values alone
    stands (beside its stopping rules); every other algorithm keeps its whole charge.
    """
    method = getattr(algorithm, "refundable", None)
    return bool(method(params)) if callable(method) else False


@dataclass(frozen=True)
class CheckedRun:
    """A run checked in full before its charge.

    Attributes
    ----------
    spec : AlgorithmSpec
    algorithm : Algorithm
    params : the validated parameters
    parts_nano : tuple of int
        The budget plan's parts; the charge is their sum.
    prepared : object
        What the algorithm's ``prepare`` built (private data and what is derived from it:
        server side only).
    """

    spec: AlgorithmSpec
    algorithm: Algorithm
    params: object
    parts_nano: tuple[int, ...]
    prepared: object

    @property
    def cost_nano(self) -> int:
        return sum(self.parts_nano)


@dataclass(frozen=True)
class ExecutedRun:
    """A mined run: the result, its stored release (versioned envelope, no diagnostics) and
    its owner diagnostics as JSON."""

    result: Release
    release_json: str
    diagnostics_json: str


def prepare_run(params, data) -> CheckedRun:
    """Step 1: check the parameters and the plan, then ``prepare`` (see the module
    docstring). Raises ParameterError/DataError; nothing is charged."""
    spec, algorithm, parts = check_params(params)
    return CheckedRun(spec, algorithm, params, parts, algorithm.prepare(data, params))


def execute_charged(checked: CheckedRun, *, rng: np.random.Generator,
                    run_id: str | None = None, seed: int | None = None,
                    progress: Progress | None = None, cap_nano: int | None = None,
                    dataset: str | None = None, audience: str | None = None,
                    charge: Callable[[], bool] | None = None,
                    store: Callable[[str, str], None] | None = None,
                    fail: Callable[[str], None] | None = None,
                    keep_intervals: bool = True) -> ExecutedRun | None:
    """Step 2: charge, mine with an accountant capped at the charge, store, return.

    Parameters
    ----------
    checked : CheckedRun
        From :func:`prepare_run`.
    rng : numpy.random.Generator
        The run's only random source (:meth:`dpcore.privacy.policy.RunPermit.rng`: fresh OS
        entropy on private data).
    cap_nano : int, optional
        The accountant's cap in nano-ε: what was charged (default the plan's total).
    dataset, audience : str, optional
        Set on the result before it is serialised (the registered name; who may read it).
    charge : callable() -> bool, optional
        Charges the plan in the ledger before any noise; returns True when the run id was
        charged and stored before (replayed: nothing is mined, None is returned).
    store : callable(release_json, diagnostics_json), optional
        Stores the result; called before the result is returned.
    keep_intervals : bool
        Compute the release's intervals and keep them in it (0 ε; a redescription run's
        bootstrap costs about 2.5 s of CPU on the sample data). The harness's sandbox runs
        skip it: nothing stores them, and readers compute intervals when asked.
    fail : callable(message), optional
        Marks a charged run failed when mining or storing raises (the error propagates),
        except :class:`~dpcore.errors.CountingInterrupted`: the run stays charged.

    Returns
    -------
    ExecutedRun or None
        None only for a replayed charge.
    """
    if charge is not None and charge():
        return None
    try:
        accountant = PrivacyAccountant(checked.cost_nano if cap_nano is None else cap_nano)
        result = checked.algorithm.mine(checked.prepared, rng=rng, accountant=accountant,
                                        run_id=run_id, seed=seed, progress=progress)
        if dataset is not None:
            result.dataset = dataset
        if audience is not None:
            result.audience = audience
        if hasattr(result, "budget"):
            result.budget = accountant.budget(
                refundable=refundable(checked.algorithm, checked.params)).to_dict()
        if keep_intervals:
            _attach_intervals(result)
        executed = ExecutedRun(result, result.stored_json(checked.spec.family),
                               result.diagnostics_json())
        if store is not None:
            store(executed.release_json, executed.diagnostics_json)
    except BaseException as exc:
        # An interrupted count drew none of its noise and nothing of the attempt left the
        # run: like a killed process, the run stays charged so it can be finished once.
        if fail is not None and not isinstance(exc, CountingInterrupted):
            fail(f"{type(exc).__name__}: {exc}")
        raise
    return executed


def _attach_intervals(result: Release) -> None:
    """Store the release's intervals with it (post-processing: 0 ε). A failure here must
    not cost the paid-for release: it is stored without them, and readers compute them as
    for a result stored before intervals were kept."""
    try:
        result.attach_intervals()
    except Exception:  # noqa: BLE001 - the release matters more than its stored intervals
        _log.exception("intervals of run %s not stored; they are computed when read",
                       getattr(result, "run_id", "?"))


def run_sandbox(params, data, *, rng: np.random.Generator, seed: int | None = None,
                run_id: str | None = None, progress: Progress | None = None) -> Release:
    """A run with no ledger (the experiment harnesses: owner/teaching, NOT a release): the
    same check and miner, an in-memory accountant capped at the plan's total."""
    executed = execute_charged(prepare_run(params, data), rng=rng, run_id=run_id, seed=seed,
                               keep_intervals=False,
                               progress=progress)
    return executed.result
