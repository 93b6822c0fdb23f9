"""Charged runs: the only way the app, the command line and the Python API mine a
ledgered dataset, and the only way they read a stored result.

Order of operations, each step before the next:

1. the policy (:func:`dpcore.privacy.policy.authorize_run`) checks the requester's role,
   the dataset's flags, the seed, the mode, the parameters, the budget plan and
   the public schema (refused: nothing charged);
2. the dataset's *registered* data is loaded and its content digest compared
   with the one recorded at registration (other data: refused, nothing charged);
3. the plan's total is charged in the ledger (one transaction that checks the
   cap; a run id charges once, so a double click or a second tab replays it);
4. the miner runs with an accountant capped at exactly that charge (noise is
   drawn here, from fresh entropy unless the data is a public demo);
5. the result is stored in the ledger; only then is it returned.

A run that fails after its charge is marked ``failed``; the charge stays
(spent budget is never refunded: the noise may already have been drawn).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import asdict

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.loading import load_dataset
from dpcore.errors import DataError, DpcoreError, ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.ledger import DatasetRecord, Ledger, RunRecord
from dpcore.privacy.policy import (
    NEIGHBOURING_RELATION,
    PolicyError,
    Requester,
    RunPermit,
    authorize_run,
    can_read,
    content_digest,
    may_see_diagnostics,
)
from dpcore.privacy.roles import OWNER
from dpcore.redescriptions.results import RunResult
from dpcore.registry import algorithm_spec

#: progress(fraction in [0, 1], message), called by miners between kernel calls.
Progress = Callable[[float, str], None]


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


def load_registered(record: DatasetRecord) -> TwoViewDataset:
    """The raw data behind a registered dataset, read with its *confirmed* public schema.

    Raises
    ------
    DataError
        No stored location, or the files do not validate against the schema.
    """
    if not record.source_path:
        raise DataError(f"dataset {record.name!r} has no stored data location; the owner "
                        "must register it again with its files")
    return load_dataset(record.source_path, schema=record.schema)


def check_registered_data(ledger: Ledger, record: DatasetRecord, data: TwoViewDataset,
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


def _check_registered_files(ledger: Ledger, record: DatasetRecord,
                            data: TwoViewDataset) -> None:
    """The registered files must still hold what was registered (records a missing digest)."""
    digest = content_digest(data)
    if record.content_digest is None:
        ledger.record_content_digest(record.name, digest)
    elif digest != record.content_digest:
        raise PolicyError(f"the files of dataset {record.name!r} changed since it was "
                          "registered; the owner must register it again. Nothing was charged")


def charge_and_mine(ledger: Ledger, dataset_name: str, params, *,
                    requester: Requester | None = None, seed: int | None = None,
                    run_id: str | None = None, data: TwoViewDataset | None = None,
                    progress: Progress | None = None) -> RunResult:
    """Authorise, charge, mine, store, return — see the module docstring.

    Parameters
    ----------
    ledger : Ledger
    dataset_name : str
        A registered dataset; its registered data is what is mined.
    params : parameters of a registered algorithm (e.g. MiningParams)
    requester : Requester, optional
        Role and audit label; default an analyst.
    seed : int, optional
        Public-demo datasets only (refused on private data).
    run_id : str, optional
        Reusing a run id replays the stored result (charged once).
    data : TwoViewDataset, optional
        The dataset's data if the caller has it loaded already (the app caches
        public demo data): public demo datasets, or the owner; it must have the
        registered content digest (:func:`check_registered_data`).
    progress : callable(fraction, message), optional

    Raises
    ------
    PolicyError
        The policy refuses the run; nothing charged.
    BudgetExceededError
        The run does not fit the remaining budget; nothing charged.
    ParameterError, DataError
        Bad parameters, unknown dataset, data that do not load; nothing charged.
    RunInProgressError
        ``run_id`` was charged before and has no stored result yet.
    """
    requester = requester or Requester()
    run_id = run_id or new_run_id()
    record = ledger.get_dataset(dataset_name)
    permit = authorize_run(record, params, requester, seed=seed)
    if data is None:
        data = load_registered(record)
        _check_registered_files(ledger, record, data)
    else:
        check_registered_data(ledger, record, data, requester)
    algorithm_spec(params.algorithm).resolve("check")(data, params)
    return _charge_mine_store(ledger, permit, data, run_id, progress)


def _charge_mine_store(ledger: Ledger, permit: RunPermit, data: TwoViewDataset, run_id: str,
                       progress: Progress | None) -> RunResult:
    params = permit.params
    spec = algorithm_spec(params.algorithm)
    parts = [s.epsilon_nano for s in spec.resolve("plan")(params)]
    recorded = {**params.to_dict(), "seed": permit.seed,
                "neighbouring": NEIGHBOURING_RELATION}
    charge = ledger.charge(run_id, permit.dataset.name, params.algorithm, parts, recorded,
                           actor=permit.requester.actor, audience=permit.audience)
    if charge.replayed:
        return load_result(ledger, run_id, role=permit.requester.role, in_progress_ok=False)
    try:
        miner = spec.resolve("miner")
        result = miner(data, params, rng=permit.rng(), accountant=PrivacyAccountant(sum(parts)),
                       run_id=run_id, seed=permit.seed, progress=progress)
        result.dataset = permit.dataset.name
        result.audience = permit.audience
        ledger.store_result(run_id, result.to_json(), json.dumps(asdict(result.diagnostics)))
    except BaseException as exc:
        ledger.mark_failed(run_id, f"{type(exc).__name__}: {exc}")
        raise
    return result


def load_result(ledger: Ledger, run_id: str, *, role: str,
                include_diagnostics: bool = False, in_progress_ok: bool = False
                ) -> RunResult | None:
    """A stored result, as ``role`` may see it.

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
    result = algorithm_spec(run.algorithm).resolve("result_type").from_json(stored[0])
    result.audience = run.audience
    if include_diagnostics:
        if not may_see_diagnostics(role, ledger.get_dataset(run.dataset)):
            raise PolicyError("owner diagnostics are computed from true data: for the owner "
                              "or on public demo data only")
        if stored[1]:
            result.diagnostics = type(result.diagnostics)(**json.loads(stored[1]))
    return result


def readable_runs(ledger: Ledger, dataset: str, role: str) -> list[RunRecord]:
    """The dataset's runs (oldest first) whose results ``role`` may read."""
    if role not in ("analyst", "owner"):
        raise ParameterError(f"unknown role {role!r}")
    return [r for r in ledger.list_runs(dataset) if can_read(r.audience, role)]
