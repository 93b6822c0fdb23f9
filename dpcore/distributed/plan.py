"""Batch plan files: which runs a batch charges and mines, validated in full before any charge.

A plan is a JSON or TOML file (by its extension: ``.json``, ``.toml``) with a list
``runs``; an optional table ``defaults`` gives values every entry inherits, and an optional
string ``name`` labels the plan (see below). Each entry
names a registered ``dataset``, an ``algorithm`` of the registry, optionally a ``run_id``
(64 characters at most) and a ``seed`` (public-demo data only), and any parameter of the
algorithm by its field name (``epsilon``, ``mode``, ``in_tr``, ``theta``, ``k``, …; the
registry's defaults fill the rest)::

    [defaults]
    dataset = "clinic"

    [[runs]]
    run_id = "clinic-altexpm-1"
    algorithm = "altexpm"
    epsilon = 0.5
    in_tr = 4

    [[runs]]
    algorithm = "mcmctreepair"
    epsilon = 0.25

**Every plan is resumable.** An entry without a ``run_id`` gets a deterministic one
(:func:`auto_run_id`: a digest of the whole plan's content, the entry's position, its
dataset and the requester's account), so rerunning the same plan — after a killed client,
say — replays the runs already done and finishes the ones charged without a result,
charging nothing twice. The same plan run again therefore draws nothing new: to mine it
afresh, give it another top-level ``name`` (any string; it enters every automatic id), or
give the entries run ids of their own.

:func:`read_plan` checks the file's structure and every entry's parameters (no ledger);
:func:`check_plan` then checks each run against the ledger and the policy exactly as
:func:`dpcore.runs.charge_and_mine` does before its charge (dataset and kind, role, seed,
mode, the registered data's content digest, the algorithm's pre-charge check), plus what
only a batch can get wrong: a run id listed twice or already charged with another cost or
dataset or already failed, and a plan whose new runs together exceed a dataset's remaining
budget. Any error names the entry (``entry 3``, 1-based, with its run id) and the field,
and nothing is charged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

from dpcore.distributed.preflight import Footprint, data_footprint
from dpcore.errors import DataError, DpcoreError, ParameterError
from dpcore.executor import prepare_run
from dpcore.family import algorithm as implementation
from dpcore.privacy.ledger import Ledger, digest_params
from dpcore.privacy.policy import (
    Requester,
    RunPermit,
    authorize_run,
    check_account_needed,
    content_digest,
    recorded_params,
)
from dpcore.privacy.roles import can_see_true_statistics
from dpcore.privacy.units import nano_to_epsilon
from dpcore.registry import ALGORITHM_SPECS, algorithm_spec
from dpcore.runs import check_dataset_kind, load_registered

__all__ = ["PlanError", "PlanEntry", "PlannedRun", "read_plan", "parse_plan", "check_plan",
           "auto_run_id"]

#: Keys of an entry that are not algorithm parameters.
ENTRY_KEYS = ("run_id", "dataset", "algorithm", "seed")
MAX_RUN_ID = 64
MAX_RUNS = 10_000


class PlanError(ParameterError):
    """A plan that cannot run as written (nothing was charged); the message names the entry
    and the field."""


@dataclass(frozen=True)
class PlanEntry:
    """One validated entry of a plan file (no ledger read yet).

    Attributes
    ----------
    index : int
        1-based position in ``runs``.
    run_id : str or None
        As given; None: :func:`check_plan` derives one (:func:`auto_run_id`).
    dataset : str
    params : parameters of the algorithm (validated)
    seed : int or None
    plan_name : str or None
        The plan's top-level ``name`` (enters the automatic run ids).
    """

    index: int
    run_id: str | None
    dataset: str
    params: object
    seed: int | None
    plan_name: str | None = None

    @property
    def label(self) -> str:
        return f"entry {self.index}" + (f" (run_id {self.run_id!r})" if self.run_id else "")


@dataclass
class PlannedRun:
    """A run the policy allowed, ready to charge (see :mod:`dpcore.distributed.batch`).

    Attributes
    ----------
    entry : PlanEntry
    run_id : str
    permit : RunPermit
    parts_nano : tuple of int
        The budget plan's parts (their sum is the charge, in nano-ε).
    state : {"new", "done", "charged", "failed"}
        ``done``: stored already (replayed, no charge, no mining); ``charged``: charged
        earlier without a result (mined again under its id, no new charge); ``failed``: an
        automatic run id whose earlier run failed (reported failed again, its charge kept;
        a run id given in the plan that failed is refused instead).
    footprint : Footprint or None
        The dataset's public size and a run's estimated peak memory
        (:func:`dpcore.distributed.preflight.data_footprint`; from public sizes only).
    """

    entry: PlanEntry
    run_id: str
    permit: RunPermit
    parts_nano: tuple[int, ...]
    state: str = "new"
    footprint: Footprint | None = None

    @property
    def cost_nano(self) -> int:
        return sum(self.parts_nano)


def _fail(where: str, field: str | None, message: str) -> PlanError:
    field_text = f", field {field!r}" if field else ""
    return PlanError(f"plan {where}{field_text}: {message}. Nothing was charged")


def read_plan(path) -> list[PlanEntry]:
    """Read and validate a plan file (JSON or TOML by extension); see the module docstring.

    Raises
    ------
    PlanError
        Unreadable file, unknown extension, bad structure, or an entry whose algorithm,
        parameters, run id or seed is wrong (the message names the entry and field).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".toml"):
        raise _fail(f"file {str(path)!r}", None, "name the plan .json or .toml")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(f"file {str(path)!r}", None, f"cannot be read ({exc})") from None
    try:
        document = json.loads(text) if suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise _fail(f"file {str(path)!r}", None, f"is not valid {suffix[1:].upper()} ({exc})"
                    ) from None
    return parse_plan(document)


def parse_plan(document) -> list[PlanEntry]:
    """Validate a plan already parsed into Python values (see :func:`read_plan`)."""
    if not isinstance(document, dict):
        raise _fail("file", None, "the top level must be a table/object with a list 'runs'")
    unknown = sorted(set(document) - {"runs", "defaults", "name"})
    if unknown:
        raise _fail("file", unknown[0], "unknown top-level key (expected 'runs' and "
                    "optionally 'defaults' and 'name')")
    name = document.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise _fail("file", "name", f"must be a non-empty string; got {name!r}")
    defaults = document.get("defaults", {})
    if not isinstance(defaults, dict):
        raise _fail("file", "defaults", "must be a table/object of values every run inherits")
    runs = document.get("runs")
    if not isinstance(runs, list) or not runs:
        raise _fail("file", "runs", "must be a non-empty list of runs")
    if len(runs) > MAX_RUNS:
        raise _fail("file", "runs", f"at most {MAX_RUNS:,} runs per plan; got {len(runs):,}")
    entries = [dataclasses.replace(_entry(i, {**defaults, **raw} if isinstance(raw, dict)
                                          else raw), plan_name=name)
               for i, raw in enumerate(runs, 1)]
    seen: dict[str, int] = {}
    for e in entries:
        if e.run_id is not None:
            if e.run_id in seen:
                raise _fail(e.label, "run_id", f"listed twice (also entry {seen[e.run_id]})")
            seen[e.run_id] = e.index
    return entries


def _entry(index: int, raw) -> PlanEntry:
    where = f"entry {index}"
    if not isinstance(raw, dict):
        raise _fail(where, None, "each run must be a table/object")
    run_id = raw.get("run_id")
    if run_id is not None:
        if (not isinstance(run_id, str) or not run_id.strip() or len(run_id) > MAX_RUN_ID
                or not all(c.isalnum() or c in "-_." for c in run_id)):
            raise _fail(where, "run_id", f"must be 1–{MAX_RUN_ID} letters, digits, '-', '_' "
                                         f"or '.'; got {run_id!r}")
        where = f"entry {index} (run_id {run_id!r})"
    for key in ("dataset", "algorithm"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise _fail(where, key, "required, a non-empty string")
    algorithm = raw["algorithm"]
    if algorithm not in ALGORITHM_SPECS:
        raise _fail(where, "algorithm", f"unknown algorithm {algorithm!r}; choose from "
                                        f"{', '.join(ALGORITHM_SPECS)}")
    seed = raw.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise _fail(where, "seed", f"must be an integer ≥ 0; got {seed!r}")
    spec = algorithm_spec(algorithm)
    defaults = spec.defaults()
    given = {k: v for k, v in raw.items() if k not in ENTRY_KEYS}
    for key in given:
        if key not in defaults or key == "algorithm":
            raise _fail(where, key, f"not a parameter of {spec.label}; its parameters: "
                                    f"{', '.join(k for k in defaults if k != 'algorithm')}")
    params = _params(spec, defaults, given, where)
    return PlanEntry(index=index, run_id=run_id, dataset=raw["dataset"], params=params,
                     seed=seed)


def _build(spec, defaults: dict, given: dict):
    params_type = implementation(spec.key).params_type
    names = {f.name for f in dataclasses.fields(params_type)}
    values = {k: v for k, v in {**defaults, **given}.items() if k in names}
    return params_type(**{**values, "algorithm": spec.key}).validate()


def _params(spec, defaults: dict, given: dict, where: str):
    """The validated parameters; a refusal names the field whose own value causes it (the
    one field that, put back to its default, makes the entry valid)."""
    try:
        return _build(spec, defaults, given)
    except (DpcoreError, TypeError, ValueError) as exc:
        message = str(exc)
        culprit = None
        for key in given:
            try:
                _build(spec, defaults, {k: v for k, v in given.items() if k != key})
            except (DpcoreError, TypeError, ValueError):
                continue
            culprit = key
            break
        raise _fail(where, culprit, message) from None


def check_plan(ledger: Ledger, entries: list[PlanEntry], requester: Requester
               ) -> list[PlannedRun]:
    """Check every entry against the ledger and the policy, before anything is charged.

    Per entry, in the order of :func:`dpcore.runs.charge_and_mine`: the dataset and its
    kind, :func:`dpcore.privacy.policy.authorize_run`, the registered data (loaded once per
    dataset here, on the client) against its registered content digest, and the
    executor's pre-charge check (:func:`dpcore.executor.prepare_run`). Then: a run id
    charged before must have the same dataset, cost, parameters and account and must not
    have failed, and the new runs of each dataset together must fit its remaining budget
    and the requester's share of it.

    An entry without a run id gets :func:`auto_run_id`, so a rerun of the same plan by the
    same account resumes it.

    Returns
    -------
    list of PlannedRun
        In plan order; ``state`` says whether a run id is new, done or charged earlier.

    Raises
    ------
    PlanError
        The first entry that cannot run (named, with its field); nothing was charged.
    """
    data_by_dataset: dict[str, object] = {}
    footprints: dict[str, Footprint] = {}
    plan_key = _plan_key(entries, requester)
    planned: list[PlannedRun] = []
    has_accounts = ledger.has_accounts()
    for e in entries:
        try:
            record = ledger._dataset_record(e.dataset)
        except ParameterError as exc:
            raise _fail(e.label, "dataset", str(exc)) from None
        try:
            check_dataset_kind(record, e.params.algorithm)
        except DpcoreError as exc:
            raise _fail(e.label, "algorithm", str(exc).removesuffix(". Nothing was charged")
                        ) from None
        try:
            check_account_needed(record, requester, has_accounts, ledger.location)
        except DpcoreError as exc:
            raise _fail(e.label, "dataset", str(exc).removesuffix(" Nothing was charged")
                        ) from None
        try:
            permit = authorize_run(record, e.params, requester, seed=e.seed)
        except DpcoreError as exc:
            raise _fail(e.label, "seed" if e.seed is not None and "seed" in str(exc) else None,
                        str(exc)) from None
        if record.name not in data_by_dataset:
            data_by_dataset[record.name] = _registered_data(ledger, record, requester, e)
            # from the public size only: the declared bound, or public-demo data's own
            footprints[record.name] = data_footprint(
                record.name, data_by_dataset[record.name], row_bound=record.row_bound,
                public_demo=record.public_demo)
        data = data_by_dataset[record.name]
        try:
            # The executor's check, as a local run makes it; what it builds is dropped here
            # (the worker builds it again from the registered files it loads).
            checked = prepare_run(e.params, data)
        except DpcoreError as exc:
            raise _fail(e.label, None, str(exc).removesuffix(". Nothing was charged")
                        ) from None
        run = PlannedRun(entry=e, run_id=e.run_id or auto_run_id(plan_key, e),
                         permit=permit, parts_nano=checked.parts_nano,
                         footprint=footprints[record.name])
        run.state = _earlier_state(ledger, run)
        planned.append(run)
    _check_budgets(ledger, planned, requester)
    return planned


def _plan_key(entries: list[PlanEntry], requester: Requester) -> str:
    """SHA-256 of the plan's content as checked (every entry's position, run id, dataset,
    seed and validated parameters; the plan's name) and of who runs it (role, account): the
    same plan by the same account gives the same key, any change another one."""
    content = {"name": entries[0].plan_name if entries else None,
               "role": requester.role, "account": requester.account,
               "runs": [[e.index, e.run_id, e.dataset, e.seed, e.params.to_dict()]
                        for e in entries]}
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str,
                                     ensure_ascii=False).encode("utf-8")).hexdigest()


def auto_run_id(plan_key: str, entry: PlanEntry) -> str:
    """The run id of an entry given none: ``auto-`` and 27 hex digits of a SHA-256 of the
    plan's key (:func:`check_plan`), the entry's position and its dataset (32 characters).

    Deterministic, so a rerun of the same plan resumes instead of charging again; it names
    no private value (the plan and the account are the requester's own).
    """
    text = f"{plan_key}\x00{entry.index}\x00{entry.dataset}"
    return "auto-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:27]


def _registered_data(ledger: Ledger, record, requester: Requester, e: PlanEntry):
    """The dataset's registered files, checked against the registered content digest."""
    if not record.source_path:
        raise _fail(e.label, "dataset", f"dataset {record.name!r} has no stored files; batch "
                                        "workers mine a dataset's registered files")
    try:
        data = load_registered(record)
    except DataError as exc:
        if can_see_true_statistics(requester.role, record.public_demo):
            raise _fail(e.label, "dataset", str(exc)) from None
        # A loader message can quote a raw value and its row: not for analysts.
        raise _fail(e.label, "dataset", f"the registered data of {record.name!r} could not "
                                        "be loaded or checked; ask the data owner") from None
    digest = content_digest(data)
    if record.content_digest is None:
        ledger.record_content_digest(record.name, digest)
    elif digest != record.content_digest:
        raise _fail(e.label, "dataset", f"the files of dataset {record.name!r} changed since "
                                        "it was registered; the owner must register it again")
    return data


def _earlier_state(ledger: Ledger, run: PlannedRun) -> str:
    """``new``, ``done`` or ``charged`` for a run id (given in the plan or automatic)."""
    try:
        earlier = ledger.get_run(run.run_id)
    except ParameterError:
        return "new"
    e = run.entry
    hint = "use a new run id"
    if e.run_id is None:
        # An automatic id: the entry has no id to change, but the plan can get a name.
        e = dataclasses.replace(e, run_id=run.run_id)
        hint = "give the plan another top-level 'name', or the entry a run_id of its own"
    if earlier.dataset != e.dataset or earlier.epsilon_nano != run.cost_nano:
        raise _fail(e.label, "run_id", f"already charged ε = {earlier.epsilon:.9g} on dataset "
                                       f"{earlier.dataset!r}; this entry costs "
                                       f"ε = {nano_to_epsilon(run.cost_nano):.9g} on "
                                       f"{e.dataset!r} ({hint})")
    if earlier.algorithm != e.params.algorithm:
        raise _fail(e.label, "run_id", f"already charged for {earlier.algorithm}, not "
                                       f"{e.params.algorithm} ({hint})")
    # The ledger's record of a run is what ran: a run id resumes only with the very
    # parameters and the account it was charged with.
    if digest_params(earlier.params) != digest_params(recorded_params(run.permit,
                                                                      earlier.params)):
        raise _fail(e.label, "run_id", "already charged with other parameters; a run id "
                                       "resumes only with the very same ones (use a new run "
                                       "id)")
    if earlier.account != run.permit.requester.account:
        raise _fail(e.label, "run_id", "already charged by another account; only that account "
                                       f"can resume it ({hint})")
    if earlier.status == "failed" and run.entry.run_id is None:
        # Rerunning a plan of automatic ids resumes the rest and reports this run failed
        # again (no charge, no mining); renaming the plan would charge every run anew.
        return "failed"
    if earlier.status == "failed":
        raise _fail(e.label, "run_id", f"that run failed ({earlier.error}); its charge stays "
                                       f"spent; {hint}")
    return "done" if earlier.status == "done" else "charged"


def _check_budgets(ledger: Ledger, planned: list[PlannedRun], requester: Requester) -> None:
    """The new runs of each dataset must fit its remaining budget (and the requester's
    share of it) together."""
    needed: dict[str, int] = {}
    last: dict[str, PlannedRun] = {}
    for run in planned:
        if run.state == "new":
            needed[run.entry.dataset] = needed.get(run.entry.dataset, 0) + run.cost_nano
            last[run.entry.dataset] = run
    for name, total in needed.items():
        remaining = ledger.budget(name).remaining_nano
        if requester.account is not None:
            remaining = ledger.quota_status(name, requester.account).remaining_nano
        if total > remaining:
            raise _fail(last[name].entry.label, "epsilon",
                        f"the plan's new runs on dataset {name!r} cost ε = "
                        f"{nano_to_epsilon(total):.9g} together, more than its remaining "
                        f"ε = {nano_to_epsilon(max(remaining, 0)):.9g}")
