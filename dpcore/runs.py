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
3. the family's pre-charge check (the registry's ``check``) builds everything the run
   needs, so nothing fails after the charge;
4. the plan's total is charged in the ledger (one transaction that checks the
   cap; a run id charges once, so a double click or a second tab replays it);
5. the family's miner runs with an accountant capped at exactly that charge (noise is
   drawn here, from fresh entropy unless the data is a public demo);
6. the result is stored in the ledger; only then is it returned.

A run that fails after its charge is marked ``failed``; the charge stays
(spent budget is never refunded: the noise may already have been drawn).

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
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING

import numpy as np

from dpcore.data.kinds import kind_of_data, load_registered_data
from dpcore.errors import DataError, DpcoreError, ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.ledger import DatasetRecord, Ledger, RunRecord
from dpcore.privacy.policy import (
    PolicyError,
    Requester,
    RunPermit,
    authorize_run,
    can_read,
    check_account_needed,
    content_digest,
    may_see_diagnostics,
    recorded_params,
)
from dpcore.privacy.roles import OWNER
from dpcore.registry import ALGORITHM_SPECS, REDESCRIPTIONS, algorithm_spec, dataset_kind_spec

if TYPE_CHECKING:
    from dpcore.data.dataset import TwoViewDataset
    from dpcore.redescriptions.results import RunResult
    from dpcore.sequences.dataset import SequenceDataset
    from dpcore.sequences.results import SequenceRunResult
    from dpcore.synthesis.results import SynthesisResult
    from dpcore.synthesis.table import SynthesisTable

    #: The data of a registered dataset, by kind.
    Data = TwoViewDataset | SequenceDataset | SynthesisTable
    #: A stored result, by family.
    Result = RunResult | SequenceRunResult | SynthesisResult

__all__ = ["RESULT_FORMAT", "RunInProgressError", "new_run_id", "run_cost", "load_registered",
           "check_registered_data", "check_dataset_kind", "charge_and_mine", "load_result",
           "readable_runs"]

#: progress(fraction in [0, 1], message), called by miners between kernel calls.
Progress = Callable[[float, str], None]

#: Version of the stored result envelope (``result_format`` and ``family`` keys). Format 1
#: (no envelope) is every redescription result stored before other families existed.
RESULT_FORMAT = 2


class RunInProgressError(DpcoreError):
    """The run id is charged but its result is not stored yet (another tab is mining it)."""


def new_run_id() -> str:
    """A fresh random run id (32 hex characters)."""
    return uuid.uuid4().hex


def run_cost(params) -> int:
    """What launching ``params`` will charge, in nano-ε (validates the parameters)."""
    return sum(s.epsilon_nano for s in _plan(params))


def _plan(params) -> list:
    return algorithm_spec(params.algorithm).resolve("plan")(params)


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
    return load_registered_data(record.kind, record.source_path, record.schema)


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
        ``MiningParams`` (redescriptions, on a two-view dataset),
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
    record = ledger.get_dataset(dataset_name)
    check_dataset_kind(record, getattr(params, "algorithm", None))
    check_account_needed(record, requester, ledger.has_accounts(), ledger.location)
    permit = authorize_run(record, params, requester, seed=seed)
    if data is None:
        data = load_registered(record)
        _check_registered_files(ledger, record, data)
    else:
        check_registered_data(ledger, record, data, requester)
    algorithm_spec(params.algorithm).resolve("check")(data, params)
    return _charge_mine_store(ledger, permit, data, run_id, progress)


def _json_default(value):
    """numpy scalars and arrays in diagnostics → plain JSON values."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def _stored_release(result, family: str) -> str:
    """The result's JSON (a DP release, no diagnostics) in the versioned envelope."""
    release = json.loads(result.to_json())
    return json.dumps({"result_format": RESULT_FORMAT, "family": family, **release},
                      ensure_ascii=False)


def _charge_mine_store(ledger: Ledger, permit: RunPermit, data: Data, run_id: str,
                       progress: Progress | None) -> Result:
    params = permit.params
    spec = algorithm_spec(params.algorithm)
    parts = [s.epsilon_nano for s in spec.resolve("plan")(params)]
    charge = ledger.charge(run_id, permit.dataset.name, params.algorithm, parts,
                           recorded_params(permit), actor=permit.requester.actor,
                           audience=permit.audience, account=permit.requester.account)
    if charge.replayed:
        return load_result(ledger, run_id, role=permit.requester.role, in_progress_ok=False)
    try:
        miner = spec.resolve("miner")
        result = miner(data, params, rng=permit.rng(), accountant=PrivacyAccountant(sum(parts)),
                       run_id=run_id, seed=permit.seed, progress=progress)
        result.dataset = permit.dataset.name
        result.audience = permit.audience
        ledger.store_result(run_id, _stored_release(result, spec.family),
                            json.dumps(asdict(result.diagnostics), default=_json_default))
    except BaseException as exc:
        ledger.mark_failed(run_id, f"{type(exc).__name__}: {exc}")
        raise
    return result


def load_result(ledger: Ledger, run_id: str, *, role: str,
                include_diagnostics: bool = False, in_progress_ok: bool = False
                ) -> Result | None:
    """A stored result of any family, as ``role`` may see it.

    The result type is the registry's ``result_type`` of the run's algorithm
    (``RunResult``, ``SequenceRunResult`` or ``SynthesisResult``); results stored before
    the versioned envelope (redescriptions) read as they were stored.

    Parameters
    ----------
    role : {"analyst", "owner"}
        Results with audience ``owner`` (faithful runs on private data) are
        refused to analysts.
    include_diagnostics : bool
        Add the owner diagnostics (computed from true data): owners, or anyone on
        a public demo dataset; refused otherwise.
    in_progress_ok : bool
        Return None (instead of raising) for a run charged but not finished.

    Raises
    ------
    PolicyError
        ``role`` may not read this result or its diagnostics.
    RunInProgressError
        The run is charged and has no stored result yet.
    DpcoreError
        The run failed (its message says why; its charge stays spent).
    ParameterError
        Unknown run id.
    DataError
        The stored result is of a newer format, or of another family than its algorithm.
    """
    run = ledger.get_run(run_id)
    if not can_read(run.audience, role):
        raise PolicyError(f"run {run_id} is a faithful run on private data; its result is "
                          "for the data owner only")
    stored = ledger.get_result(run_id)
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
        if not may_see_diagnostics(role, ledger.get_dataset(run.dataset)):
            raise PolicyError("owner diagnostics are computed from true data: for the owner "
                              "or on public demo data only")
        if stored[1]:
            result.diagnostics = type(result.diagnostics)(**json.loads(stored[1]))
    return result


def _read_release(text: str, run: RunRecord) -> Result:
    """Parse a stored release: the envelope (format 2) or a bare redescription result (1)."""
    spec = algorithm_spec(run.algorithm)
    release = json.loads(text)
    fmt = release.pop("result_format", 1)
    family = release.pop("family", REDESCRIPTIONS)
    if not isinstance(fmt, int) or not 1 <= fmt <= RESULT_FORMAT:
        raise DataError(f"the stored result of run {run.run_id} has format {fmt!r}; this "
                        f"dpcore reads formats 1 to {RESULT_FORMAT} (a newer dpcore wrote it?)")
    if family != spec.family:
        raise DataError(f"the stored result of run {run.run_id} is of family {family!r} but "
                        f"its algorithm {run.algorithm!r} is of family {spec.family!r}")
    return spec.resolve("result_type").from_dict(release)


def readable_runs(ledger: Ledger, dataset: str, role: str) -> list[RunRecord]:
    """The dataset's runs (oldest first) whose results ``role`` may read."""
    if role not in ("analyst", "owner"):
        raise ParameterError(f"unknown role {role!r}")
    return [r for r in ledger.list_runs(dataset) if can_read(r.audience, role)]
