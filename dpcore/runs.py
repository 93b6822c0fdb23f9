"""Charged runs: the only way the app, the command line and the Python API mine a
ledgered dataset, and the only way they read a stored result — for every mining family
(redescriptions, frequent sequences, synthetic data).

Order of operations, each step before the next:

1. the policy (:func:`dpcore.privacy.policy.authorize_run`) checks the requester's role,
   the dataset's flags and kind (the algorithm's family must mine this kind of dataset),
   the seed, the mode, the parameters, the budget plan and the public schema (refused:
   nothing charged);
2. the dataset's *registered* data is loaded by its kind and its content digest compared
   with the one recorded at registration (other data: refused, nothing charged);
3. the algorithm's ``prepare`` (:func:`dpcore.executor.prepare_run`) builds everything the
   run needs, so nothing fails after the charge;
4. the plan's total is charged in the ledger (one transaction that checks the
   cap; a run id charges once, so a double click or a second tab replays it);
5. the algorithm's ``mine`` runs on what ``prepare`` built, with an accountant capped at
   exactly that charge (noise is drawn here, from fresh entropy unless the data is a public
   demo);
6. the result is stored in the ledger; only then is it returned.

Steps 3–6 are :mod:`dpcore.executor`, the one executor batch plans, batch workers and the
experiment harnesses call too.

A run that fails after its charge is marked ``failed``; the charge stays (the noise may
already have been drawn). A run that finishes having spent less than its charge, on
released values only, returns the rest with its stored result (docs/PRIVACY.md §5a).

Stored results are JSON with two envelope keys beside the family's own fields:
``result_format`` (:data:`RESULT_FORMAT`) and ``family``. Results stored before the
envelope existed (format 1: redescriptions only) read as redescription results.

The function names here are stable (the app, the CLI and the API call them):
:func:`charge_and_mine`, :func:`load_result`, :func:`readable_runs`, :func:`run_cost`,
:func:`new_run_id`, :func:`load_registered`, :func:`check_registered_data`.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING

from dpcore.errors import DataError, DpcoreError, ParameterError
from dpcore.executor import CheckedRun, check_params, execute_charged, plan_parts, prepare_run
from dpcore.family import RESULT_FORMAT, Progress, algorithm, dataset_kind, kinds
from dpcore.privacy.ledger import DatasetRecord, Ledger, RunRecord
from dpcore.privacy.policy import (
    PolicyError,
    Requester,
    RunPermit,
    authorize_run,
    can_read,
    check_account_needed,
    checked_requester,
    content_digest,
    may_see_diagnostics,
    recorded_params,
)
from dpcore.privacy.roles import OWNER, can_see_true_statistics
from dpcore.registry import ALGORITHM_SPECS, REDESCRIPTIONS, algorithm_spec, dataset_kind_spec

if TYPE_CHECKING:
    from dpcore.data.dataset import TwoViewDataset
    from dpcore.data.sequences.dataset import SequenceDataset
    from dpcore.data.table.table import SynthesisTable
    from dpcore.redescriptions.results import RunResult
    from dpcore.sequences.results import SequenceRunResult
    from dpcore.synthesis.results import SynthesisResult

    #: The data of a registered dataset, by kind.
    Data = TwoViewDataset | SequenceDataset | SynthesisTable
    #: A stored result, by family.
    Result = RunResult | SequenceRunResult | SynthesisResult

__all__ = ["RESULT_FORMAT", "RunInProgressError", "new_run_id", "run_cost", "load_registered",
           "check_registered_data", "check_dataset_kind", "charge_and_mine", "load_result",
           "readable_runs", "kind_of_data", "Progress", "finish_charged_run",
           "PRIVATE_PROGRESS", "earlier_params", "stored_params"]

#: The one progress message an analyst on private data gets while a run mines (:func:`_relayed`).
PRIVATE_PROGRESS = ("mining — progress is not shown on private data (it could quote noisy "
                    "values of an attempt not stored yet)")

class RunInProgressError(DpcoreError):
    """The run id is charged but its result is not stored yet (another tab is mining it)."""


def new_run_id() -> str:
    """A fresh random run id (32 hex characters)."""
    return uuid.uuid4().hex


def run_cost(params) -> int:
    """What launching ``params`` will charge, in nano-ε (validates the parameters)."""
    return sum(plan_parts(params))


def kind_of_data(data) -> str:
    """The dataset kind of a loaded dataset object (DataError for anything else)."""
    for key, kind in kinds().items():
        if isinstance(data, kind.data_type):
            return key
    names = ", ".join(kind.data_type.__name__ for kind in kinds().values())
    raise DataError(f"expected one of {names}; got {type(data).__name__}")


def load_registered(record: DatasetRecord) -> Data:
    """The raw data behind a registered dataset, read by its kind with its *confirmed* schema.

    A two-view dataset gives a ``TwoViewDataset``, a sequence dataset a ``SequenceDataset``,
    a labelled table a ``SynthesisTable`` (private data: server side only).

    Raises
    ------
    DataError
        No stored location, or the files do not validate against the schema.
    """
    if not record.source_path:
        raise DataError(f"dataset {record.name!r} has no stored data location; the owner "
                        "must register it again with its files")
    return dataset_kind(record.kind).load_data(record.source_path, record.schema)


def check_dataset_kind(record: DatasetRecord, algorithm: str) -> None:
    """Refuse an algorithm that does not mine this kind of dataset (before any charge).

    Raises
    ------
    DataError
        E.g. PFS2 on a two-view table: the message names the algorithm, the dataset, both
        kinds and the algorithms that do mine this dataset.
    ParameterError
        Unknown algorithm.
    """
    spec = algorithm_spec(algorithm)
    if record.kind != spec.dataset_kind:
        fitting = [s.key for s in ALGORITHM_SPECS.values() if s.dataset_kind == record.kind]
        raise DataError(f"{spec.label} mines a {dataset_kind_spec(spec.dataset_kind).label}; "
                        f"dataset {record.name!r} is a {dataset_kind_spec(record.kind).label} "
                        f"(its algorithms: {', '.join(fitting)}). Nothing was charged")


def check_registered_data(ledger: Ledger, record: DatasetRecord, data: Data,
                          requester: Requester) -> DatasetRecord:
    """Refuse data whose content digest is not the one registered.

    Only the owner may hand data to a run on a private dataset: for anyone else the
    comparison itself would be an unpaid equality test against the private data (a guess
    of every row but one could be checked value by value), so it is refused before it is
    made. A dataset registered before digests existed records the digest of its
    *registered* files here (trust on first use), not that of the data given; only a
    dataset registered without files takes the first data handed in.

    Raises
    ------
    PolicyError
        A non-owner hands data for a private dataset, or the data differ from the
        registered data.
    """
    if requester.role != OWNER and record.public_demo is not True:
        raise PolicyError(f"only the owner may hand data to a run on the private dataset "
                          f"{record.name!r}; runs always mine its registered data")
    if kind_of_data(data) != record.kind:
        raise DataError(f"the data given are a {dataset_kind_spec(kind_of_data(data)).label}; "
                        f"dataset {record.name!r} is a {dataset_kind_spec(record.kind).label}. "
                        "Nothing was charged")
    if record.content_digest is None:
        # Files registered: they define the digest. None (registered through the API
        # with data in memory): the first data handed in by the owner, or on public data.
        reference = load_registered(record) if record.source_path else data
        record = ledger.record_content_digest(record.name, content_digest(reference))
    if content_digest(data) != record.content_digest:
        raise PolicyError(f"the data given are not the registered data of dataset "
                          f"{record.name!r} (content digest differs); runs always mine a "
                          "dataset's registered data, and nothing was charged")
    return record


def _check_registered_files(ledger: Ledger, record: DatasetRecord, data: Data) -> None:
    """The registered files must still hold what was registered (records a missing digest)."""
    digest = content_digest(data)
    if record.content_digest is None:
        ledger.record_content_digest(record.name, digest)
    elif digest != record.content_digest:
        raise PolicyError(f"the files of dataset {record.name!r} changed since it was "
                          "registered; the owner must register it again. Nothing was charged")


def charge_and_mine(ledger: Ledger, dataset_name: str, params, *,
                    requester: Requester | None = None, seed: int | None = None,
                    run_id: str | None = None, data: Data | None = None,
                    progress: Progress | None = None) -> Result:
    """Authorise, charge, mine, store, return — see the module docstring.

    Parameters
    ----------
    ledger : Ledger
    dataset_name : str
        A registered dataset; its registered data is what is mined.
    params : parameters of a registered algorithm
        ``TreeParams`` or ``SerenadeParams`` (redescriptions, on a two-view dataset),
        ``SequenceMiningParams`` (PFS2 and its baseline, on a sequence dataset) or
        ``SynthesisParams`` (MC-GEN and the floor, on a labelled table); the registry
        names each algorithm's type.
    requester : Requester, optional
        Role, audit label and signed-in account (charged, and its quota checked); default
        an anonymous analyst (public demo data, or a ledger without accounts).
    seed : int, optional
        Public-demo datasets only (refused on private data).
    run_id : str, optional
        Reusing a run id replays the stored result (charged once).
    data : TwoViewDataset, SequenceDataset or SynthesisTable, optional
        The dataset's data if the caller has it loaded already (the app caches
        public demo data): public demo datasets, or the owner; it must have the
        registered content digest (:func:`check_registered_data`).
    progress : callable(fraction, message), optional

    Returns
    -------
    RunResult, SequenceRunResult or SynthesisResult
        The registry's ``result_type`` of the algorithm, already stored in the ledger.

    Raises
    ------
    PolicyError
        The policy refuses the run (e.g. no signed-in account on private data); nothing
        charged.
    BudgetExceededError
        The run does not fit the remaining budget or the account's share; nothing charged.
    ParameterError, DataError
        Bad parameters, unknown dataset, a dataset of another kind than the algorithm
        mines, data that do not load; nothing charged.
    RunInProgressError
        ``run_id`` was charged before and has no stored result yet.
    """
    requester = requester or Requester()
    run_id = run_id or new_run_id()
    record = ledger._dataset_record(dataset_name)
    check_dataset_kind(record, getattr(params, "algorithm", None))
    check_params(params)
    check_account_needed(record, requester, ledger.has_accounts(), ledger.location)
    permit = authorize_run(record, params, requester, seed=seed)
    if data is None:
        data = load_registered(record)
        _check_registered_files(ledger, record, data)
    else:
        check_registered_data(ledger, record, data, requester)
    return _charge_mine_store(ledger, permit, prepare_run(params, data), run_id, progress)


def _charge_mine_store(ledger: Ledger, permit: RunPermit, checked: CheckedRun, run_id: str,
                       progress: Progress | None) -> Result:
    replayed = []

    def charge() -> bool:
        replayed.append(ledger.charge(run_id, permit.dataset.name, checked.spec.key,
                                      list(checked.parts_nano),
                                      recorded_params(permit, earlier_params(ledger, run_id)),
                                      actor=permit.requester.actor,
                                      audience=permit.audience,
                                      account=permit.requester.account).replayed)
        return replayed[0]

    executed = execute_charged(checked, rng=permit.rng(), run_id=run_id, seed=permit.seed,
                               progress=_relayed(progress, permit),
                               dataset=permit.dataset.name,
                               audience=permit.audience, charge=charge,
                               store=lambda release, diagnostics: ledger.store_result(
                                   run_id, release, diagnostics),
                               fail=lambda message: ledger.mark_failed(run_id, message))
    if executed is None:
        return load_result(ledger, run_id, requester=permit.requester, in_progress_ok=False)
    return executed.result


def stored_params(run):
    """The parameters a run or result records (``algorithm`` and ``params``: a
    :class:`~dpcore.privacy.ledger.RunRecord` or a stored result), read into its algorithm's
    parameter type by the type's ``from_dict`` — every form the family ever stored (the
    redescription miners' 26-key dicts included: :func:`dpcore.redescriptions.params.read_params`).
    The recorded ``seed`` and ``neighbouring`` relation are not parameters and are left out.

    Raises
    ------
    ParameterError
        An unknown algorithm, or a key its type never had.
    """
    recorded = {k: v for k, v in dict(run.params).items() if k not in ("seed", "neighbouring")}
    return algorithm(algorithm_spec(run.algorithm).key).params_type.from_dict(recorded)


def earlier_params(ledger: Ledger, run_id: str) -> dict | None:
    """The parameters the ledger records for ``run_id`` if it was charged before, else None
    (what :func:`~dpcore.privacy.policy.recorded_params` compares a resumed run with)."""
    try:
        return ledger.get_run(run_id).params
    except ParameterError:
        return None


def _relayed(progress: Progress | None, permit: RunPermit) -> Progress | None:
    """The miner's progress as the requester may see it.

    Miners' messages and fractions can depend on intermediate noisy values (PFS2's noisy
    longest length, MC-GEN's noisy groups, the number of redescriptions) of an attempt that
    is not stored yet. An analyst on private data gets none of it — only that the run
    started and how it ended — so an attempt killed before its result was stored released
    nothing, and :func:`finish_charged_run` may draw it again (docs/PRIVACY.md, "A run
    killed before its result was stored").
    """
    if progress is None or can_see_true_statistics(permit.requester.role,
                                                   permit.dataset.public_demo):
        return progress
    progress(0.0, PRIVATE_PROGRESS)       # fixed text, fraction 0: nothing data-dependent
    return None


def finish_charged_run(ledger: Ledger, run_id: str, requester: Requester | None = None, *,
                       data: Data | None = None, progress: Progress | None = None) -> Result:
    """Mine again, at no further cost, a run that was charged but never stored (its
    process was killed), under the same run id and with the same recorded parameters.

    Privacy: the run's one charge pays for the one release that is stored. The killed
    attempt stored nothing and relayed nothing that depends on the data to an analyst on
    private data (:func:`_relayed`), so it released nothing and a fresh draw is the run's
    only release — the same argument as a batch run resumed after its client died
    (docs/PRIVACY.md, "A run killed before its result was stored"). If two callers finish
    the same run at once, the ledger stores the first result and both get that one.

    Parameters
    ----------
    ledger : Ledger
    run_id : str
        A run in status ``charged`` without a stored result.
    requester : Requester, optional
        Role, audit label and signed-in account; default an anonymous analyst. It must be
        the account the run was charged to (or the owner), be allowed to read the run's
        result and to run it (the policy checks the recorded parameters again).
    data : TwoViewDataset, SequenceDataset or SynthesisTable, optional
        As in :func:`charge_and_mine`.
    progress : callable(fraction, message), optional

    Returns
    -------
    RunResult, SequenceRunResult or SynthesisResult
        The stored result.

    Raises
    ------
    ParameterError
        Unknown run id, or a run that is stored already or failed (a failed run is never
        redrawn: its attempt may have ended after a release); nothing charged.
    PolicyError, DataError
        The run was charged to another account, the policy refuses the run now, or the
        registered data changed; nothing charged.
    """
    requester = requester or Requester()
    run = ledger.get_run(run_id)
    if run.status != "charged" or ledger.has_result(run_id):
        raise ParameterError(f"run {run_id} is {run.status}, not a charged run without a "
                             "result; only such a run can be finished. Nothing was charged")
    if not can_read(run.audience, requester.role):
        raise PolicyError(f"run {run_id} is a faithful run on private data; only the data "
                          "owner may finish it")
    # The run's charge names the account that spent it: finishing it is that account's
    # release (or the owner's), never a way for another analyst to obtain it unpaid.
    if requester.role != OWNER and run.account != requester.account:
        raise PolicyError(f"run {run_id} was charged to another account; only that account "
                          "or the data owner may finish it. Nothing was charged")
    params = stored_params(run)
    seed = run.params.get("seed")
    record = ledger._dataset_record(run.dataset)
    check_dataset_kind(record, params.algorithm)
    check_account_needed(record, requester, ledger.has_accounts(), ledger.location)
    permit = authorize_run(record, params, requester, seed=seed)
    if data is None:
        data = load_registered(record)
        _check_registered_files(ledger, record, data)
    else:
        check_registered_data(ledger, record, data, requester)
    checked = prepare_run(params, data)
    if checked.cost_nano != run.epsilon_nano:
        raise ParameterError(f"run {run_id} was charged ε = {run.epsilon:g} but its recorded "
                             "parameters now plan another total; it cannot be finished")

    def store(release: str, diagnostics: str) -> None:
        try:
            ledger.store_result(run_id, release, diagnostics)
        except ParameterError:
            if ledger.get_run(run_id).status != "done":    # not a concurrent finisher's store
                raise

    # No charge (the run's one charge is in the ledger) and no fail(): a failed finish
    # leaves the run charged, so it can be finished again.
    execute_charged(checked, rng=permit.rng(), run_id=run_id, seed=permit.seed,
                    progress=_relayed(progress, permit), dataset=record.name,
                    audience=run.audience, store=store)
    return load_result(ledger, run_id, requester=requester)


def load_result(ledger: Ledger, run_id: str, *, requester: Requester,
                include_diagnostics: bool = False, in_progress_ok: bool = False
                ) -> Result | None:
    """A stored result of any family, as ``requester`` may see it (0 ε: it was paid for).

    The result type is the registry's ``result_type`` of the run's algorithm
    (``RunResult``, ``SequenceRunResult`` or ``SynthesisResult``); results stored before
    the versioned envelope (redescriptions) read as they were stored.

    Parameters
    ----------
    requester : Requester
        Who reads, as the policy checks it (:func:`dpcore.privacy.policy.checked_requester`):
        a signed-in account's requester, or ``Requester()`` for an anonymous analyst. Never
        a role string: a caller cannot read owner-only results by naming the owner role.
        Results with audience ``owner`` (faithful runs on private data) are refused to
        analysts.
    include_diagnostics : bool
        Add the owner diagnostics (computed from true data): owners, or anyone on
        a public demo dataset; refused otherwise.
    in_progress_ok : bool
        Return None (instead of raising) for a run charged but not finished.

    Raises
    ------
    TypeError
        ``requester`` is not a :class:`~dpcore.privacy.policy.Requester` (a role string).
    PolicyError
        The requester may not read this result or its diagnostics, no longer passes its
        checks, or was signed in on another ledger.
    RunInProgressError
        The run is charged and has no stored result yet.
    DpcoreError
        The run failed (its message says why; its charge stays spent).
    ParameterError
        Unknown run id.
    DataError
        The stored result is of a newer format, or of another family than its algorithm,
        or one of its tables is missing from the ledger's results store or does not match
        its digest.
    """
    role = checked_requester(requester, ledger.location).role
    run = ledger.get_run(run_id)
    if not can_read(run.audience, role):
        raise PolicyError(f"run {run_id} is a faithful run on private data; its result is "
                          "for the data owner only")
    stored = ledger.get_result_data(run_id)
    if stored is None:
        if run.status == "failed":
            raise DpcoreError(f"run {run_id} failed and has no result ({run.error}); its "
                              "budget stays spent")
        if in_progress_ok:
            return None
        raise RunInProgressError(f"run {run_id} is charged and has no stored result yet "
                                 "(still running, or its process was killed); its budget "
                                 "is spent")
    result = _read_release(stored[0], run)
    result.audience = run.audience
    if include_diagnostics:
        if not may_see_diagnostics(role, ledger._dataset_record(run.dataset)):
            raise PolicyError("owner diagnostics are computed from true data: for the owner "
                              "or on public demo data only")
        if stored[1]:
            result.diagnostics = type(result.diagnostics)(**json.loads(stored[1]))
    return result


def _read_release(release: dict, run: RunRecord) -> Result:
    """Read a stored release (parsed): the envelope (format 2) or a bare redescription
    result (1)."""
    spec = algorithm_spec(run.algorithm)
    release = dict(release)
    fmt = release.pop("result_format", 1)
    family = release.pop("family", REDESCRIPTIONS)
    if not isinstance(fmt, int) or not 1 <= fmt <= RESULT_FORMAT:
        raise DataError(f"the stored result of run {run.run_id} has format {fmt!r}; this "
                        f"dpcore reads formats 1 to {RESULT_FORMAT} (a newer dpcore wrote it?)")
    if family != spec.family:
        raise DataError(f"the stored result of run {run.run_id} is of family {family!r} but "
                        f"its algorithm {run.algorithm!r} is of family {spec.family!r}")
    return algorithm(spec.key).result_type.from_dict(release)


def readable_runs(ledger: Ledger, dataset: str, role: str) -> list[RunRecord]:
    """The dataset's runs (oldest first) whose results ``role`` may read."""
    if role not in ("analyst", "owner"):
        raise ParameterError(f"unknown role {role!r}")
    return [r for r in ledger.list_runs(dataset) if can_read(r.audience, role)]
