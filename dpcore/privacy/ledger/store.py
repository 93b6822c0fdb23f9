"""The ledger store: :class:`Ledger`, every read and write, on either backend.

See :mod:`dpcore.privacy.ledger` for the guarantees (charge before noise, exact
arithmetic, append-only, idempotent per run id, results before display). The SQL here is
written once for both backends (:mod:`dpcore.privacy.ledger.backends`): what differs —
connections, transactions, locking, the schema's DDL — lives in the backend.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from dpcore.errors import BudgetExceededError, DataError, ParameterError, WorkspaceConflict
from dpcore.privacy.ledger.backends import backend_for
from dpcore.privacy.ledger.records import (
    AUDIENCES,
    MAX_NAME_LENGTH,
    MAX_WORKSPACE_CHARS,
    AccountRecord,
    AuditEntry,
    AuthEvent,
    BudgetStatus,
    ChargeRecord,
    DatasetCard,
    DatasetRecord,
    QuotaStatus,
    RunRecord,
    WorkspaceRecord,
)
from dpcore.privacy.ledger.result_store import (
    ENV_VAR as RESULTS_ENV_VAR,
)
from dpcore.privacy.ledger.result_store import (
    MARKER,
    ResultStore,
    ResultStoreMissing,
    externalise,
    resolve,
)
from dpcore.privacy.ledger.schemas import schema_from_json, stored_schema
from dpcore.privacy.units import epsilon_to_nano, nano_to_epsilon
from dpcore.registry import DATASET_KINDS, dataset_kind_spec

__all__ = ["ENV_VAR", "DEFAULT_PATH", "Ledger", "ACCOUNT_ROLES", "ANONYMOUS", "params_digest",
           "digest_params", "check_account_name"]

ENV_VAR = "DPRM_LEDGER"
DEFAULT_PATH = "~/.local/share/dprm/ledger.sqlite"
# Largest total a single charge may have (keeps every SUM far inside SQLite's int64).
_MAX_NANO = 2**62
#: Roles an account may have (the same two as :mod:`dpcore.privacy.roles`).
ACCOUNT_ROLES = ("analyst", "owner")
#: The workspace pseudo-account of visitors who did not sign in (public demo data only).
ANONYMOUS = "~anonymous"
#: Account names: a letter or digit, then letters, digits and ``_ . @ + -`` (e-mail
#: addresses fit); ``~`` starts the pseudo-accounts nobody signs in as.
_ACCOUNT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}")


# --------------------------------------------------------------------------- helpers

def _now() -> datetime:
    return datetime.now(UTC)


def _stamp(moment: datetime) -> str:
    """Fixed-width ISO 8601 UTC text (sorts like the time it names)."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _check_text(value, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ParameterError(f"{what} must be a non-empty string; got {value!r}")
    return value


def _check_name(name, what: str = "dataset name") -> str:
    """A dataset or sandbox name, checked by :func:`dpcore.data.names.check_dataset_name`.

    Names also name folders (uploads live in ``<data dir>/<name>``), so one strict pattern:
    a letter or digit, then letters, digits, ``_ - . ~``; at most ``MAX_NAME_LENGTH``.
    """
    from dpcore.data.names import check_dataset_name

    return check_dataset_name(name, what)


def _check_digest(digest) -> str | None:
    if digest is None:
        return None
    if (not isinstance(digest, str) or len(digest) != 64
            or any(c not in "0123456789abcdef" for c in digest)):
        raise ParameterError(f"content digest must be 64 lowercase hex characters (SHA-256); "
                             f"got {digest!r}")
    return digest


def check_account_name(name, what: str = "account name") -> str:
    """An account name (ParameterError naming what is wrong otherwise)."""
    if not isinstance(name, str) or not _ACCOUNT_NAME.fullmatch(name):
        raise ParameterError(f"{what} must be 1 to 128 characters: a letter or digit, then "
                             f"letters, digits or _ . @ + -; got {name!r}")
    return name


def params_digest(params_json: str) -> str:
    """SHA-256 (hex) of a run's recorded parameters as the ledger stores them (canonical JSON).

    Stored with each charge: a run id charged with one set of parameters can only ever be
    replayed or resumed with the very same set, and a worker mines a charged run only when
    its permit's parameters have this digest.
    """
    return hashlib.sha256(params_json.encode("utf-8")).hexdigest()


def digest_params(params: dict) -> str:
    """:func:`params_digest` of a parameter dict, serialised exactly as :meth:`Ledger.charge`
    stores it."""
    return params_digest(_dumps(params, "params"))


def _declared_refund(release, charged_nano: int) -> int:
    """The refund (nano-ε) a stored release declares in its ``budget`` block, checked.

    ``budget`` = ``{"charged_nano", "spent_nano", "refunded_nano"}`` (absent: no refund).
    Raises ParameterError when it disagrees with the run's charge or returns more than
    the run left unspent.
    """
    budget = release.get("budget") if isinstance(release, dict) else None
    if budget is None:
        return 0
    try:
        charged, spent, refunded = (budget[k] for k in ("charged_nano", "spent_nano",
                                                         "refunded_nano"))
    except (TypeError, KeyError):
        raise ParameterError("the result's budget block needs charged_nano, spent_nano and "
                             "refunded_nano") from None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (charged, spent,
                                                                         refunded)):
        raise ParameterError("the result's budget amounts must be integers (nano-ε)")
    if charged != charged_nano:
        raise ParameterError(f"the result says the run was charged {charged} nano-ε but the "
                             f"ledger charged it {charged_nano}")
    if spent < 0 or refunded < 0 or spent + refunded > charged:
        raise ParameterError(f"the result spent {spent} nano-ε and returns {refunded} of a "
                             f"charge of {charged}: it may return at most what it left unspent")
    return refunded


def _cap_nano(cap_epsilon) -> int:
    """A cap in ε → integer nano-ε, rounded down (ParameterError on ≤ 0, NaN, inf)."""
    return epsilon_to_nano(cap_epsilon, name="cap ε", round_up=False)


def _dumps(value, what: str) -> str:
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"{what} must be JSON-serialisable without NaN/inf: {exc}") from None


def _check_charge_input(run_id, dataset, algorithm, actor, audience, params,
                        account) -> None:
    """:meth:`Ledger.charge`'s checks of its arguments' form (ParameterError naming the bad
    one; nothing read or written)."""
    _check_text(run_id, "run_id")
    _check_name(dataset)
    _check_text(algorithm, "algorithm")
    _check_text(actor, "actor")
    if account is not None:
        check_account_name(account)
    if audience not in AUDIENCES:
        raise ParameterError(f"audience must be one of {', '.join(AUDIENCES)}; "
                             f"got {audience!r}")
    if not isinstance(params, dict):
        raise ParameterError(f"params must be a dict; got {type(params).__name__}")


def _check_parts(epsilon_parts) -> tuple[int, ...]:
    if isinstance(epsilon_parts, (str, bytes)) or not hasattr(epsilon_parts, "__iter__"):
        raise ParameterError("epsilon_parts must be a list of integer nano-ε parts; "
                             f"got {epsilon_parts!r}")
    parts = []
    for p in epsilon_parts:
        if isinstance(p, bool) or not isinstance(p, numbers.Integral):
            raise ParameterError("each ε part must be an integer number of nano-ε "
                                 f"(see dpcore.privacy.units.epsilon_to_nano); got {p!r}")
        if int(p) <= 0:
            raise ParameterError(f"each ε part must be > 0 nano-ε; got {int(p)}")
        parts.append(int(p))
    if not parts:
        raise ParameterError("epsilon_parts is empty: a run must charge some ε")
    if sum(parts) >= _MAX_NANO:
        raise ParameterError(f"a charge of {sum(parts)} nano-ε is too large")
    return tuple(parts)


# --------------------------------------------------------------------------- the ledger

class Ledger:
    """The privacy ledger (see :mod:`dpcore.privacy.ledger`), in SQLite or PostgreSQL.

    Parameters
    ----------
    location : str or os.PathLike, optional
        A SQLite file (a path or ``sqlite:PATH``; parent folders are created) or a
        PostgreSQL database (``postgresql://user:password@host:port/database``). Default:
        ``$DPRM_LEDGER``, else ``~/.local/share/dprm/ledger.sqlite``. The tables are created
        (or migrated) on first use. The object holds the location only, never a
        connection: it is cheap to keep and may be shared between threads.
    results_dir : str or os.PathLike, optional
        The results store of a PostgreSQL ledger (large tables of results as Parquet files,
        :mod:`~dpcore.privacy.ledger.result_store`): an existing directory every app server
        and batch client shares. Default ``$DPRM_RESULTS_DIR``; without either a PostgreSQL
        ledger refuses every charge. A SQLite ledger's store is always the folder
        ``<file>.results/`` beside its file (this argument is refused for one).

    Attributes
    ----------
    path : pathlib.Path or None
        The SQLite file; None for a PostgreSQL ledger.
    backend : str
        ``"sqlite"`` or ``"postgresql"``.
    """

    def __init__(self, location: str | os.PathLike | None = None, *,
                 results_dir: str | os.PathLike | None = None):
        if location is None:
            location = os.environ.get(ENV_VAR) or DEFAULT_PATH
        self._backend = backend_for(location)
        self.path: Path | None = getattr(self._backend, "path", None)
        self.backend: str = self._backend.name
        if results_dir is not None and self.path is not None:
            raise ParameterError("a SQLite ledger keeps its results store beside its file "
                                 f"({self.path}.results); results_dir is for PostgreSQL")
        self._results_dir = results_dir

    @classmethod
    def open(cls, location: str | os.PathLike | None = None, *,
             results_dir: str | os.PathLike | None = None) -> Ledger:
        """The ledger at ``location`` (as the constructor; ``sqlite:PATH`` or a URL)."""
        return cls(location, results_dir=results_dir)

    @property
    def results_store(self) -> ResultStore:
        """Where large tables of results are kept (:mod:`~dpcore.privacy.ledger.result_store`).

        Raises
        ------
        ResultStoreMissing
            A PostgreSQL ledger without ``results_dir`` or ``$DPRM_RESULTS_DIR``.
        """
        if self.path is not None:
            return ResultStore(self.path.with_name(self.path.name + ".results"), create=True)
        folder = self._results_dir or os.environ.get(RESULTS_ENV_VAR, "").strip()
        if not folder:
            raise ResultStoreMissing(
                f"the PostgreSQL ledger {self.location} has no results store: set "
                f"{RESULTS_ENV_VAR} to a directory that every app server and batch client of "
                "this ledger shares (large result tables are kept there as files)")
        return ResultStore(folder)

    def check_results_store(self) -> None:
        """Refuse (ResultStoreMissing) if results could not be stored: a PostgreSQL
        ledger without a results store, or a store whose directory does not exist."""
        self.results_store.check()

    @property
    def location(self) -> str:
        """Where the ledger is: ``sqlite:PATH`` or the URL without its password."""
        return self._backend.location

    @property
    def folder(self) -> Path:
        """The local folder for files kept beside the ledger (uploads by default).

        The SQLite file's folder; for PostgreSQL the default SQLite location's folder.
        """
        return (self.path or Path(DEFAULT_PATH).expanduser().resolve()).parent

    def __repr__(self) -> str:
        return repr(self._backend)

    # -- connections ---------------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator:
        """A fresh connection in a read transaction: one consistent snapshot."""
        with self._backend.read() as con:
            yield con

    @contextmanager
    def _write(self) -> Iterator:
        """A fresh connection in a write transaction; COMMIT on success, else ROLLBACK.

        Rows read to decide a write are selected with ``self._lock`` appended (a row lock
        on PostgreSQL; SQLite's BEGIN IMMEDIATE already serialises every writer).
        """
        with self._backend.write() as con:
            yield con

    @property
    def _lock(self) -> str:
        return self._backend.row_lock

    # -- datasets ------------------------------------------------------------------

    @staticmethod
    def _dataset_row(con, name: str, lock: str = ""):
        """The dataset's row (``lock``: the backend's row lock, held until commit)."""
        row = con.execute("SELECT * FROM datasets WHERE name = ?" + lock, (name,)).fetchone()
        if row is None:
            raise ParameterError(f"unknown dataset {name!r}")
        return row

    @staticmethod
    def _record(row) -> DatasetRecord:
        return DatasetRecord(name=row["name"],
                             schema=schema_from_json(row["schema_json"], row["name"],
                                                     row["kind"]),
                             source_path=row["source_path"],
                             public_demo=bool(row["public_demo"]),
                             confirmed=bool(row["confirmed"]),
                             sandbox_of=row["sandbox_of"],
                             created_at=row["created_at"],
                             content_digest=row["content_digest"],
                             kind=row["kind"], row_bound=row["row_bound"])

    def register_dataset(self, name: str, schema, source_path: str | None,
                         cap_epsilon, *, actor: str, confirmed: bool = False,
                         content_digest: str | None = None) -> DatasetRecord:
        """Register a dataset with its public schema and total budget, all or nothing.

        Parameters
        ----------
        name : str
            Unique dataset name (non-empty, printable, no outer whitespace, ≤ 128 chars).
        schema : Schema, SequenceSchema or TableSchema
            The public schema; its type sets the dataset's kind (two-view, sequences,
            labelled table; fixed for good) and ``schema.public_demo`` its demo flag.
        source_path : str or None
            Where the data lives (owner-only).
        cap_epsilon : float
            Total ε the dataset may ever spend (> 0; rounded down to whole nano-ε).
        actor : str
            Who registers (audit).
        confirmed : bool
            Register the schema as already confirmed by the owner (e.g. vetted sample
            data). Default False: call :meth:`confirm_schema` before any run.
        content_digest : str, optional
            :func:`dpcore.privacy.policy.content_digest` of the data; runs on other data are
            refused. None: the first run records it.

        Raises
        ------
        ParameterError
            Bad or taken name, cap ≤ 0 / NaN / inf, bad actor or source path.
        DataError
            Schema is not one of the three schema types, or cannot be stored as JSON.
        """
        _check_name(name)
        _check_text(actor, "actor")
        if source_path is not None and not isinstance(source_path, (str, os.PathLike)):
            raise ParameterError(f"source_path must be a path or None; got {source_path!r}")
        source = None if source_path is None else os.fspath(source_path)
        cap = _cap_nano(cap_epsilon)
        digest = _check_digest(content_digest)
        kind, schema_json = stored_schema(schema)
        now = _stamp(_now())
        with self._write() as con:
            if con.execute("SELECT 1 FROM datasets WHERE name = ?", (name,)).fetchone():
                raise ParameterError(f"a dataset named {name!r} already exists")
            con.execute("INSERT INTO datasets (name, schema_json, source_path, public_demo, "
                        "confirmed, sandbox_of, created_by, created_at, content_digest, kind) "
                        "VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?, ?)",
                        (name, schema_json, source, int(bool(schema.public_demo)),
                         int(bool(confirmed)), actor, now, digest, kind))
            con.execute("INSERT INTO budgets (dataset, cap_nano, actor, created_at) "
                        "VALUES (?, ?, ?, ?)", (name, cap, actor, now))
            row = self._dataset_row(con, name)
        return self._record(row)

    def confirm_schema(self, name: str, schema, *, actor: str) -> DatasetRecord:
        """Store the owner-confirmed public schema of a dataset and mark it confirmed.

        The schema may differ from the registered (prefilled) one, but must be of the
        dataset's kind; its ``public_demo`` flag replaces the dataset's.

        Raises
        ------
        ParameterError
            Unknown dataset or bad actor.
        DataError
            Schema not storable, or of another kind than the dataset.
        """
        _check_name(name)
        _check_text(actor, "actor")
        kind, schema_json = stored_schema(schema)
        with self._write() as con:
            row = self._dataset_row(con, name, self._lock)
            if row["kind"] != kind:
                raise DataError(f"dataset {name!r} is a "
                                f"{dataset_kind_spec(row['kind']).label}; a schema of a "
                                f"{dataset_kind_spec(kind).label} cannot replace its schema")
            con.execute("UPDATE datasets SET schema_json = ?, public_demo = ?, confirmed = 1 "
                        "WHERE name = ?", (schema_json, int(bool(schema.public_demo)), name))
            row = self._dataset_row(con, name)
        return self._record(row)

    def _dataset_record(self, name: str) -> DatasetRecord:
        """The dataset's whole record, owner-only fields included. **Internal.**

        The record holds where the raw data live (``source_path``) and the content digest
        (which confirms a guess of private data offline): it is for the run path (loading
        the registered data, checking its digest) and the owner's tools, never for an
        analyst. Analysts get :meth:`dataset_card`. (Anyone who can open the ledger can
        read both anyway: docs/PRIVACY.md, "One trust boundary".)

        Raises ParameterError for an unknown name.
        """
        _check_name(name)
        with self._read() as con:
            row = self._dataset_row(con, name)
        return self._record(row)

    def dataset_card(self, name: str) -> DatasetCard:
        """The dataset's public card: what analysts may know (no data location, no digest);
        the public way to read a dataset (:meth:`_dataset_record` is internal).

        Raises ParameterError for an unknown name.
        """
        return self._dataset_record(name).card()

    def list_dataset_cards(self, *, include_sandboxes: bool = True,
                           kind: str | None = None) -> list[DatasetCard]:
        """:meth:`_dataset_records` as public cards (what an analyst's session may hold)."""
        return [r.card() for r in self._dataset_records(include_sandboxes=include_sandboxes,
                                                        kind=kind)]

    def record_content_digest(self, name: str, digest: str) -> DatasetRecord:
        """Record the content digest of a dataset registered without one (first run).

        A digest once recorded never changes: recording a different one raises.

        Raises
        ------
        ParameterError
            Unknown dataset, malformed digest, or a different digest already recorded.
        """
        _check_name(name)
        digest = _check_digest(digest)
        with self._write() as con:
            row = self._dataset_row(con, name, self._lock)
            if row["content_digest"] is None:
                con.execute("UPDATE datasets SET content_digest = ? WHERE name = ? "
                            "AND content_digest IS NULL", (digest, name))
            elif row["content_digest"] != digest:
                raise ParameterError(f"dataset {name!r} already has another content digest")
            row = self._dataset_row(con, name)
        return self._record(row)

    def declare_row_bound(self, name: str, rows: int | None, *, actor: str) -> DatasetRecord:
        """Record the owner's public upper bound on a dataset's rows (items for sequences).

        The bound is public metadata, like the schema: the Dask preflight sizes a run's
        memory from it, never from the private row count (docs/PRIVACY.md §15). The owner
        (the entry point checks the role) declares a bound the registered data meet; a bound
        below the true size only makes the memory estimate too small. None withdraws it.

        Raises
        ------
        ParameterError
            Unknown dataset, or ``rows`` not a positive integer (nothing changed).
        """
        _check_name(name)
        _check_text(actor, "actor")
        if rows is not None and (isinstance(rows, bool) or not isinstance(rows, numbers.Integral)
                                 or not 0 < rows < _MAX_NANO):
            raise ParameterError(f"a row bound must be a positive whole number of rows; got "
                                 f"{rows!r}")
        with self._write() as con:
            self._dataset_row(con, name, self._lock)
            con.execute("UPDATE datasets SET row_bound = ? WHERE name = ?",
                        (None if rows is None else int(rows), name))
            row = self._dataset_row(con, name)
        return self._record(row)

    def _dataset_records(self, *, include_sandboxes: bool = True,
                         kind: str | None = None) -> list[DatasetRecord]:
        """All datasets' whole records, by kind then name (sandboxes too unless
        ``include_sandboxes=False``). **Internal**, as :meth:`_dataset_record`; analysts get
        :meth:`list_dataset_cards`.

        Kinds come in registry order (:data:`dpcore.registry.DATASET_KINDS`: two-view
        tables first), so a picker's first entry stays a two-view table when sequence and
        labelled-table datasets are registered beside them. ``kind`` keeps only that kind's
        datasets, e.g. the two-view tables a redescription page offers.
        """
        where, args = [], []
        if not include_sandboxes:
            where.append("sandbox_of IS NULL")
        if kind is not None:
            if kind not in DATASET_KINDS:
                raise ParameterError(f"dataset kind must be one of {', '.join(DATASET_KINDS)}; "
                                     f"got {kind!r}")
            where.append("kind = ?")
            args.append(kind)
        sql = "SELECT * FROM datasets" + (" WHERE " + " AND ".join(where) if where else "")
        with self._read() as con:
            rows = con.execute(sql + " ORDER BY name", args).fetchall()
        order = {k: i for i, k in enumerate(DATASET_KINDS)}
        # sorted() is stable: by name within each kind
        return sorted((self._record(r) for r in rows), key=lambda r: order[r.kind])

    def create_sandbox(self, name: str, sandbox_name: str, cap_epsilon, *,
                       actor: str) -> DatasetRecord:
        """Copy a dataset's record (schema, source, flags) under a new name with its own cap.

        The real dataset's budget is untouched; charges against the sandbox
        count only against the sandbox's cap. Sandboxes run on the real data,
        so their results are for the owner (unless the dataset is a public demo).

        Raises
        ------
        ParameterError
            Unknown dataset, bad or taken sandbox name, cap ≤ 0.
        """
        _check_name(name)
        _check_name(sandbox_name, "sandbox name")
        _check_text(actor, "actor")
        cap = _cap_nano(cap_epsilon)
        now = _stamp(_now())
        with self._write() as con:
            parent = self._dataset_row(con, name)
            if con.execute("SELECT 1 FROM datasets WHERE name = ?", (sandbox_name,)).fetchone():
                raise ParameterError(f"a dataset named {sandbox_name!r} already exists")
            con.execute("INSERT INTO datasets (name, schema_json, source_path, public_demo, "
                        "confirmed, sandbox_of, created_by, created_at, content_digest, kind) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (sandbox_name, parent["schema_json"], parent["source_path"],
                         parent["public_demo"], parent["confirmed"], name, actor, now,
                         parent["content_digest"], parent["kind"]))
            con.execute("INSERT INTO budgets (dataset, cap_nano, actor, created_at) "
                        "VALUES (?, ?, ?, ?)", (sandbox_name, cap, actor, now))
            row = self._dataset_row(con, sandbox_name)
        return self._record(row)

    # -- budgets -------------------------------------------------------------------

    @staticmethod
    def _budget(con, name: str) -> BudgetStatus:
        # spent = charged − returned: a refund gives back what a run never spent
        # (docs/PRIVACY.md, "Charged = spent: refunds")
        cap, charged, refunded = con.execute(
            "SELECT (SELECT cap_nano FROM budgets WHERE dataset = ? ORDER BY id DESC LIMIT 1), "
            "(SELECT COALESCE(SUM(epsilon_nano), 0) FROM charges WHERE dataset = ?), "
            "(SELECT COALESCE(SUM(epsilon_nano), 0) FROM refunds WHERE dataset = ?)",
            (name, name, name)).fetchone()
        cap = int(cap or 0)
        spent = int(charged) - int(refunded)
        return BudgetStatus(cap, spent, cap - spent, int(refunded))

    def budget(self, name: str) -> BudgetStatus:
        """Current cap, spent and remaining ε of a dataset, read from the database.

        Raises
        ------
        ParameterError
            Unknown dataset.
        """
        _check_name(name)
        with self._read() as con:
            self._dataset_row(con, name)
            return self._budget(con, name)

    def set_cap(self, name: str, cap_epsilon, *, actor: str) -> BudgetStatus:
        """Set a new total cap for a dataset (raise it, or lower it to no less than spent).

        The change is appended to the cap history; earlier caps are kept.

        Raises
        ------
        ParameterError
            Unknown dataset, cap ≤ 0 / NaN / inf, or a cap below what is already spent
            (the message names both).
        """
        _check_name(name)
        _check_text(actor, "actor")
        cap = _cap_nano(cap_epsilon)
        with self._write() as con:
            self._dataset_row(con, name, self._lock)
            spent = self._budget(con, name).spent_nano
            if cap < spent:
                raise ParameterError(
                    f"cannot set the cap of dataset {name!r} to ε = {nano_to_epsilon(cap):.9g}: "
                    f"ε = {nano_to_epsilon(spent):.9g} is already spent; "
                    f"the cap must be at least that")
            con.execute("INSERT INTO budgets (dataset, cap_nano, actor, created_at) "
                        "VALUES (?, ?, ?, ?)", (name, cap, actor, _stamp(_now())))
            return self._budget(con, name)

    # -- accounts and quotas -------------------------------------------------------

    @staticmethod
    def _account_row(con, name: str, lock: str = ""):
        row = con.execute("SELECT * FROM accounts WHERE name = ?" + lock, (name,)).fetchone()
        if row is None:
            raise ParameterError(f"unknown account {name!r}")
        return row

    @staticmethod
    def _has_accounts(con) -> bool:
        return con.execute("SELECT 1 FROM accounts LIMIT 1").fetchone() is not None

    @staticmethod
    def _account_record(row) -> AccountRecord:
        return AccountRecord(name=row["name"], role=row["role"],
                             has_password=row["password_hash"] is not None,
                             external_identity=row["external_identity"],
                             created_by=row["created_by"], created_at=row["created_at"],
                             disabled_at=row["disabled_at"])

    def add_account(self, name: str, role: str, *, actor: str,
                    password_hash: str | None = None,
                    external_identity: str | None = None) -> AccountRecord:
        """Create an account (an analyst or an owner) that may sign in.

        Parameters
        ----------
        name : str
            Account name (letters, digits, ``_ . @ + -``; at most 128 characters).
        role : {"analyst", "owner"}
        actor : str
            Who creates it (audit).
        password_hash : str, optional
            A scrypt hash from :func:`dpcore.privacy.roles.hash_password` (never the
            password itself).
        external_identity : str, optional
            A verified identity (``issuer|subject`` of an OpenID Connect provider) mapped
            to this account. At least one of the two is needed.

        Raises
        ------
        ParameterError
            Bad or taken name, bad role, no way to sign in, a malformed hash, or an
            identity already mapped to another account; nothing is written.
        """
        from dpcore.privacy.roles import is_password_hash

        check_account_name(name)
        _check_text(actor, "actor")
        if role not in ACCOUNT_ROLES:
            raise ParameterError(f"role must be one of {', '.join(ACCOUNT_ROLES)}; got {role!r}")
        if password_hash is None and external_identity is None:
            raise ParameterError("an account needs a password hash or an external identity "
                                 "to sign in with")
        if password_hash is not None and not is_password_hash(password_hash):
            raise ParameterError("password_hash must be a scrypt hash "
                                 "(dpcore.privacy.roles.hash_password)")
        if external_identity is not None:
            _check_text(external_identity, "external identity")
        with self._write() as con:
            if con.execute("SELECT 1 FROM accounts WHERE name = ?", (name,)).fetchone():
                raise ParameterError(f"an account named {name!r} already exists")
            if external_identity is not None and con.execute(
                    "SELECT 1 FROM accounts WHERE external_identity = ?",
                    (external_identity,)).fetchone():
                raise ParameterError(f"the identity {external_identity!r} already signs in "
                                     "as another account")
            con.execute("INSERT INTO accounts (name, role, password_hash, external_identity, "
                        "created_by, created_at, disabled_at) VALUES (?, ?, ?, ?, ?, ?, NULL)",
                        (name, role, password_hash, external_identity, actor, _stamp(_now())))
            row = self._account_row(con, name)
        return self._account_record(row)

    def disable_account(self, name: str, *, actor: str) -> AccountRecord:
        """Disable an account for good: it can no longer sign in or spend (charges stay).

        Disabling a disabled account again changes nothing. Raises ParameterError for an
        unknown account.
        """
        check_account_name(name)
        _check_text(actor, "actor")
        with self._write() as con:
            row = self._account_row(con, name, self._lock)
            if row["disabled_at"] is None:
                con.execute("UPDATE accounts SET disabled_at = ? WHERE name = ?",
                            (_stamp(_now()), name))
            row = self._account_row(con, name)
        return self._account_record(row)

    def get_account(self, name: str) -> AccountRecord:
        """An account (ParameterError if unknown)."""
        check_account_name(name)
        with self._read() as con:
            return self._account_record(self._account_row(con, name))

    def list_accounts(self) -> list[AccountRecord]:
        """Every account, by name."""
        with self._read() as con:
            rows = con.execute("SELECT * FROM accounts ORDER BY name").fetchall()
        return [self._account_record(r) for r in rows]

    def has_accounts(self) -> bool:
        """Whether any account exists (then runs on private data need one)."""
        with self._read() as con:
            return self._has_accounts(con)

    def account_for_identity(self, identity: str) -> AccountRecord | None:
        """The account a verified external identity signs in as, or None."""
        _check_text(identity, "external identity")
        with self._read() as con:
            row = con.execute("SELECT * FROM accounts WHERE external_identity = ?",
                              (identity,)).fetchone()
        return None if row is None else self._account_record(row)

    @staticmethod
    def _quota(con, dataset: str, account: str) -> int | None:
        row = con.execute("SELECT quota_nano FROM quotas WHERE dataset = ? AND account = ? "
                          "ORDER BY id DESC LIMIT 1", (dataset, account)).fetchone()
        return None if row is None else int(row[0])

    @staticmethod
    def _account_spent(con, dataset: str, account: str) -> int:
        charged, refunded = con.execute(
            "SELECT (SELECT COALESCE(SUM(epsilon_nano), 0) FROM charges "
            "WHERE dataset = ? AND account = ?), (SELECT COALESCE(SUM(epsilon_nano), 0) "
            "FROM refunds WHERE dataset = ? AND account = ?)",
            (dataset, account, dataset, account)).fetchone()
        return int(charged) - int(refunded)

    def set_quota(self, dataset: str, account: str, quota_epsilon, *,
                  actor: str) -> QuotaStatus:
        """Give an analyst a share of a dataset's cap (appended to the quota history).

        The share may be 0 (the analyst may spend nothing more) and may be lowered below
        what the analyst already spent (no further run fits; nothing is refunded). Owners
        have no quota: they spend the cap.

        Raises
        ------
        ParameterError
            Unknown dataset or account, an owner account, a negative / NaN / infinite share.
        """
        _check_name(dataset)
        check_account_name(account)
        _check_text(actor, "actor")
        if quota_epsilon == 0:
            quota = 0
        else:
            quota = epsilon_to_nano(quota_epsilon, name="quota ε", round_up=False)
        with self._write() as con:
            self._dataset_row(con, dataset, self._lock)
            if self._account_row(con, account)["role"] == "owner":
                raise ParameterError(f"{account!r} is an owner account: owners spend the "
                                     "dataset's cap, they have no quota")
            con.execute("INSERT INTO quotas (dataset, account, quota_nano, actor, created_at) "
                        "VALUES (?, ?, ?, ?, ?)", (dataset, account, quota, actor,
                                                   _stamp(_now())))
            return QuotaStatus(quota, self._account_spent(con, dataset, account),
                               self._budget(con, dataset))

    def quota_status(self, dataset: str, account: str) -> QuotaStatus:
        """An account's share of a dataset's cap, what it spent, and the dataset's budget."""
        _check_name(dataset)
        check_account_name(account)
        with self._read() as con:
            self._dataset_row(con, dataset)
            role = self._account_row(con, account)["role"]
            quota = None if role == "owner" else self._quota(con, dataset, account)
            return QuotaStatus(quota, self._account_spent(con, dataset, account),
                               self._budget(con, dataset))

    def _password_hash(self, name: str) -> tuple[str | None, str | None, str | None]:
        """``(role, password_hash, disabled_at)`` of an account, or three Nones (sign-in)."""
        with self._read() as con:
            row = con.execute("SELECT role, password_hash, disabled_at FROM accounts "
                              "WHERE name = ?", (name,)).fetchone()
        return (None, None, None) if row is None else (row[0], row[1], row[2])

    # -- charges and runs ----------------------------------------------------------

    @staticmethod
    def _charge_record(row, replayed: bool) -> ChargeRecord:
        return ChargeRecord(id=row["id"], run_id=row["run_id"], dataset=row["dataset"],
                            algorithm=row["algorithm"], epsilon_nano=row["epsilon_nano"],
                            parts_nano=tuple(json.loads(row["parts_json"])),
                            params=json.loads(row["params_json"]), actor=row["actor"],
                            created_at=row["created_at"], replayed=replayed,
                            account=row["account"], params_digest=row["params_digest"])

    def charge(self, run_id: str, dataset: str, algorithm: str, epsilon_parts,
               params: dict, *, actor: str = "analyst",
               audience: str = "everyone", account: str | None = None) -> ChargeRecord:
        """Charge a run's ε against its dataset's cap (and its account's quota), before noise.

        One write transaction (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: the dataset's row
        locked ``FOR UPDATE`` first): check the dataset and the account; return the existing
        charge if this run id was charged already with the same dataset, total, parameters
        and account; read the cap, the sum of charges, the account's quota and the
        account's sum of charges; refuse if either would be exceeded, else insert the charge
        (with the account and the digest of the parameters) and the run (status
        ``charged``).

        Parameters
        ----------
        run_id : str
            Unique id of the run (a double click with the same id charges once).
        dataset, algorithm : str
        epsilon_parts : list of int
            The run's ε split in nano-ε (each > 0), e.g.
            ``[s.epsilon_nano for s in plan_budget(params)]``; the charge is their sum.
        params : dict
            JSON-serialisable run parameters (recorded with the charge, with their digest,
            :func:`params_digest`).
        actor : str
            Free label of the entry point (audit).
        audience : {"everyone", "owner"}
            Who may read the stored result (decided by :mod:`dpcore.privacy.policy`; fixed
            for the run's lifetime).
        account : str, optional
            The signed-in account that spends (recorded; its quota on ``dataset`` is
            checked). Required on a private dataset once the ledger holds any account; None
            on public demo data or on a ledger without accounts (a single person's
            workbench).

        Returns
        -------
        ChargeRecord
            ``replayed=True`` when the run id had already been charged identically.

        Raises
        ------
        BudgetExceededError
            The total exceeds what remains of the cap or of the account's quota; nothing
            was written.
        ParameterError
            Bad input, unknown dataset, unconfirmed schema, an unknown or disabled account,
            no account where one is needed, or the run id was already charged with a
            different total, dataset, parameters or account.
        ResultStoreMissing
            A PostgreSQL ledger without a results store (``$DPRM_RESULTS_DIR``), or a store
            directory that does not exist: a result could not be stored, so nothing is
            charged.
        """
        _check_charge_input(run_id, dataset, algorithm, actor, audience, params, account)
        parts = _check_parts(epsilon_parts)
        # A run is paid for only if its result can be stored, large tables included.
        self.check_results_store()
        total = sum(parts)
        parts_json = json.dumps(list(parts))
        params_json = _dumps(params, "params")
        digest = params_digest(params_json)
        with self._write() as con:
            # The dataset's row lock (PostgreSQL) is held from before the cap, the quota and
            # the sums of charges are read until the new charge commits: no two charges of
            # one dataset overlap, so neither the cap nor any account's quota can be
            # exceeded by racing charges (docs/PRIVACY.md). The helpers below all run on
            # this one connection, inside this one transaction.
            ds = self._dataset_row(con, dataset, self._lock)
            old = con.execute("SELECT * FROM charges WHERE run_id = ?", (run_id,)).fetchone()
            if old is not None:
                self._check_replay(old, run_id, dataset, total, digest, account)
                return self._charge_record(old, replayed=True)
            if not ds["confirmed"]:
                raise ParameterError(f"the public schema of dataset {dataset!r} is not "
                                     "confirmed by its owner yet; no run may start")
            quota = self._spender_quota(con, ds, dataset, account)
            self._check_room(con, run_id, dataset, total, account, quota)
            now = _stamp(_now())
            con.execute("INSERT INTO charges (run_id, dataset, algorithm, epsilon_nano, "
                        "parts_json, params_json, actor, created_at, account, params_digest) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (run_id, dataset, algorithm, total, parts_json, params_json,
                         actor, now, account, digest))
            con.execute("INSERT INTO runs (run_id, dataset, algorithm, status, params_json, "
                        "error, created_at, finished_at, audience) "
                        "VALUES (?, ?, ?, 'charged', ?, NULL, ?, NULL, ?)",
                        (run_id, dataset, algorithm, params_json, now, audience))
            row = con.execute("SELECT * FROM charges WHERE run_id = ?", (run_id,)).fetchone()
        return self._charge_record(row, replayed=False)

    def _spender_quota(self, con, ds, dataset: str, account: str | None) -> int | None:
        """The spending account's quota on ``dataset`` (nano-ε), None if it has none (an
        owner, public demo data, a ledger without accounts). Raises ParameterError for a
        disabled account, or no account where one is needed. Call inside :meth:`charge`'s
        transaction."""
        if account is not None:
            acc = self._account_row(con, account)
            if acc["disabled_at"] is not None:
                raise ParameterError(f"account {account!r} is disabled; it cannot spend")
            return None if acc["role"] == "owner" else self._quota(con, dataset, account)
        if not ds["public_demo"] and self._has_accounts(con):
            raise ParameterError(
                f"dataset {dataset!r} is private and this ledger has accounts: every run "
                "on it must name the signed-in account that spends. Nothing was charged")
        return None

    def _check_room(self, con, run_id: str, dataset: str, total: int, account: str | None,
                    quota: int | None) -> None:
        """Raise BudgetExceededError unless ``total`` (nano-ε) fits what remains of the
        dataset's cap and, with a quota, of the account's share. Call inside
        :meth:`charge`'s transaction, which holds the lock the sums are read under."""
        status = self._budget(con, dataset)
        if total > status.remaining_nano:
            raise BudgetExceededError(nano_to_epsilon(total),
                                      nano_to_epsilon(max(status.remaining_nano, 0)),
                                      what=f"run {run_id!r} on dataset {dataset!r}")
        if quota is not None:
            left = quota - self._account_spent(con, dataset, account)
            if total > left:
                raise BudgetExceededError(
                    nano_to_epsilon(total), nano_to_epsilon(max(left, 0)),
                    what=f"run {run_id!r}: account {account!r}'s share of dataset "
                         f"{dataset!r} (ε = {nano_to_epsilon(quota):.9g})")

    @staticmethod
    def _check_replay(old, run_id: str, dataset: str, total: int, digest: str,
                      account: str | None) -> None:
        """A run id charged before replays only the identical charge (else ParameterError)."""
        if old["dataset"] != dataset or old["epsilon_nano"] != total:
            raise ParameterError(
                f"run {run_id!r} was already charged ε = "
                f"{nano_to_epsilon(old['epsilon_nano']):.9g} on dataset "
                f"{old['dataset']!r}; it cannot be charged ε = "
                f"{nano_to_epsilon(total):.9g} on {dataset!r} (use a new run id)")
        # The ledger's record of a run is what ran: resuming it with other parameters
        # would mine those under its id (and its own would never run).
        if old["params_digest"] is not None and old["params_digest"] != digest:
            raise ParameterError(f"run {run_id!r} was charged with other parameters; it can "
                                 "only be resumed with the very same ones (use a new run id)")
        if old["account"] != account:
            raise ParameterError(f"run {run_id!r} was charged by another account; only that "
                                 "account can resume it (use a new run id)")

    @staticmethod
    def _run_record(row) -> RunRecord:
        return RunRecord(run_id=row["run_id"], dataset=row["dataset"],
                         algorithm=row["algorithm"], status=row["status"],
                         epsilon_nano=row["epsilon_nano"], params=json.loads(row["params_json"]),
                         error=row["error"], created_at=row["created_at"],
                         finished_at=row["finished_at"], audience=row["audience"],
                         account=row["account"], refunded_nano=int(row["refunded_nano"]))

    _RUN_SELECT = ("SELECT r.*, c.epsilon_nano, c.account, c.params_digest, "
                   "COALESCE(f.epsilon_nano, 0) AS refunded_nano FROM runs r "
                   "JOIN charges c ON c.run_id = r.run_id "
                   "LEFT JOIN refunds f ON f.run_id = r.run_id")

    def get_run(self, run_id: str) -> RunRecord:
        """A run's state. Raises ParameterError for an unknown run id."""
        _check_text(run_id, "run_id")
        with self._read() as con:
            row = con.execute(self._RUN_SELECT + " WHERE r.run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise ParameterError(f"unknown run {run_id!r}")
        return self._run_record(row)

    def list_runs(self, dataset: str) -> list[RunRecord]:
        """Runs of a dataset, oldest first. Raises ParameterError for an unknown dataset."""
        _check_name(dataset)
        with self._read() as con:
            self._dataset_row(con, dataset)
            rows = con.execute(self._RUN_SELECT + " WHERE r.dataset = ? ORDER BY c.id",
                               (dataset,)).fetchall()
        return [self._run_record(r) for r in rows]

    # -- results -------------------------------------------------------------------

    def store_result(self, run_id: str, result_json: str,
                     diagnostics_json: str | None = None) -> None:
        """Persist a run's DP release (and owner-only diagnostics); mark the run ``done``.

        One transaction: insert the refund the release declares (if any), the result row
        and set the status, so a crash leaves all or none of them. Storing the identical
        result again is a no-op (its refund is never written twice: one per run, and only
        while the run is ``charged``).

        The refund is the release's ``budget.refunded_nano`` (set by
        :func:`dpcore.executor.execute_charged` from the run's accountant for algorithms
        whose spending stops on released values only; docs/PRIVACY.md, "Charged = spent:
        refunds"). It must be an integer in [0, charge − spent].

        Parameters
        ----------
        run_id : str
            A run in status ``charged``.
        result_json : str
            ``RunResult.to_json()`` — the DP release, **without** diagnostics.
        diagnostics_json : str, optional
            Non-private owner diagnostics (e.g. MCMC score traces) as JSON.

        Large tables of the release (:mod:`~dpcore.privacy.ledger.result_store`: a list of
        rows or records whose JSON is ≥ 1 MiB) are written to the results store first and
        referenced from the row by their SHA-256; :meth:`get_result` puts them back.

        Raises
        ------
        ParameterError
            Unknown run, run not ``charged`` (failed, or done with another result),
            invalid JSON, diagnostics inside ``result_json``, a release that uses the
            store's reserved key, or a result whose ``run_id`` / ``dataset`` /
            ``epsilon_nano`` / ``budget`` disagree with the charge.
        """
        _check_text(run_id, "run_id")
        if not isinstance(result_json, str):
            raise ParameterError("result_json must be a JSON string (RunResult.to_json())")
        try:
            release = json.loads(result_json)
        except ValueError as exc:
            raise ParameterError(f"result_json is not valid JSON: {exc}") from None
        if diagnostics_json is not None:
            if not isinstance(diagnostics_json, str):
                raise ParameterError("diagnostics_json must be a JSON string or None")
            try:
                json.loads(diagnostics_json)
            except ValueError as exc:
                raise ParameterError(f"diagnostics_json is not valid JSON: {exc}") from None
        if isinstance(release, dict) and "diagnostics" in release:
            raise ParameterError("result_json contains owner-only diagnostics (computed from "
                                 "true data); store them as diagnostics_json instead")
        # Large tables go to files first (fsync + rename), so the row that marks the run
        # done never refers to a table that is not on disk.
        kept, digests = externalise(release, lambda: self.results_store)
        if digests:
            result_json = json.dumps(kept, ensure_ascii=False)
        with self._write() as con:
            # no outer join under a row lock (PostgreSQL refuses one): the refund, if any,
            # is written below, while this run is still charged
            run = con.execute("SELECT r.*, c.epsilon_nano, c.account FROM runs r "
                              "JOIN charges c ON c.run_id = r.run_id WHERE r.run_id = ?"
                              + self._lock,
                              (run_id,)).fetchone()
            if run is None:
                raise ParameterError(f"unknown run {run_id!r}: charge it before storing a result")
            if isinstance(release, dict):
                for key in ("run_id", "dataset"):
                    if key in release and release[key] != run[key]:
                        raise ParameterError(f"result {key} {release[key]!r} does not match "
                                             f"the charged run's {run[key]!r}")
                spent = release.get("epsilon_nano")
                if isinstance(spent, int) and spent > run["epsilon_nano"]:
                    raise ParameterError(f"result spent {spent} nano-ε but the run was charged "
                                         f"only {run['epsilon_nano']}")
            refund = _declared_refund(release, run["epsilon_nano"])
            if run["status"] == "done":
                old = con.execute("SELECT result_json, diagnostics_json FROM results "
                                  "WHERE run_id = ?", (run_id,)).fetchone()
                if old is not None and tuple(old) == (result_json, diagnostics_json):
                    return
                raise ParameterError(f"run {run_id!r} already has a stored result")
            if run["status"] != "charged":
                raise ParameterError(f"run {run_id!r} is {run['status']}; a result can only be "
                                     "stored for a charged, unfinished run")
            now = _stamp(_now())
            if refund:
                con.execute("INSERT INTO refunds (run_id, dataset, epsilon_nano, account, "
                            "reason, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                            (run_id, run["dataset"], refund, run["account"],
                             "unspent: the run stopped early on released values", now))
            con.execute("INSERT INTO results (run_id, result_json, diagnostics_json, created_at) "
                        "VALUES (?, ?, ?, ?)", (run_id, result_json, diagnostics_json, now))
            con.execute("UPDATE runs SET status = 'done', finished_at = ? WHERE run_id = ?",
                        (now, run_id))

    def get_result(self, run_id: str) -> tuple[str, str | None] | None:
        """``(result_json, diagnostics_json)`` of a finished run, or None if it has none yet.

        ``result_json`` is the release as it was stored, its large tables read back from the
        results store; ``diagnostics_json`` is owner-only (not private).

        Raises
        ------
        ParameterError
            Unknown run id.
        DataError
            A table of the result is missing from the results store or does not match the
            digest the ledger holds (changed or damaged); nothing is returned.
        """
        row = self._result_row(run_id)
        if row is None:
            return None
        text, diagnostics_json = row
        if MARKER in text:                 # a result with stored tables (else: as stored)
            text = json.dumps(self._resolved(run_id, text), ensure_ascii=False)
        return text, diagnostics_json

    def has_result(self, run_id: str) -> bool:
        """Whether a run has a stored result (reads no stored table; ParameterError for an
        unknown run id)."""
        _check_text(run_id, "run_id")
        with self._read() as con:
            if con.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is None:
                raise ParameterError(f"unknown run {run_id!r}")
            return con.execute("SELECT 1 FROM results WHERE run_id = ?",
                               (run_id,)).fetchone() is not None

    def get_result_data(self, run_id: str) -> tuple[object, str | None] | None:
        """As :meth:`get_result`, the release parsed (saves a JSON round trip of its tables)."""
        row = self._result_row(run_id)
        return None if row is None else (self._resolved(run_id, row[0]), row[1])

    def _result_row(self, run_id: str) -> tuple[str, str | None] | None:
        _check_text(run_id, "run_id")
        with self._read() as con:
            if con.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is None:
                raise ParameterError(f"unknown run {run_id!r}")
            row = con.execute("SELECT result_json, diagnostics_json FROM results "
                              "WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else (row["result_json"], row["diagnostics_json"])

    def _resolved(self, run_id: str, text: str):
        release = json.loads(text)
        if MARKER not in text:
            return release
        return resolve(release, lambda: self.results_store, what=f"the result of run {run_id!r}")

    def mark_failed(self, run_id: str, error: str) -> None:
        """Mark a charged run failed (its charge stays: never refunded).

        ``error`` appears in the audit log and run lists; do not put raw data
        values in it. Marking an already failed run again is a no-op.

        Raises
        ------
        ParameterError
            Unknown run, or the run is already done.
        """
        _check_text(run_id, "run_id")
        message = str(error) if error is not None else "failed"
        with self._write() as con:
            row = con.execute("SELECT status FROM runs WHERE run_id = ?" + self._lock,
                              (run_id,)).fetchone()
            if row is None:
                raise ParameterError(f"unknown run {run_id!r}")
            if row["status"] == "failed":
                return
            if row["status"] == "done":
                raise ParameterError(f"run {run_id!r} is done; it cannot be marked failed")
            con.execute("UPDATE runs SET status = 'failed', error = ?, finished_at = ? "
                        "WHERE run_id = ?", (message, _stamp(_now()), run_id))

    def fail_stale_runs(self, older_than_seconds: float) -> list[str]:
        """Mark runs still ``charged`` after ``older_than_seconds`` as failed; return their ids.

        Such runs were left by a killed or crashed process; their charge stays.
        Choose a threshold longer than any live run: a result cannot be stored
        for a run once it is failed.
        """
        if isinstance(older_than_seconds, bool) or not isinstance(older_than_seconds,
                                                                  numbers.Real):
            raise ParameterError(f"older_than_seconds must be a number; "
                                 f"got {older_than_seconds!r}")
        if not math.isfinite(older_than_seconds) or older_than_seconds < 0:
            raise ParameterError(f"older_than_seconds must be finite and ≥ 0; "
                                 f"got {older_than_seconds!r}")
        now = _now()
        cutoff = _stamp(now - timedelta(seconds=float(older_than_seconds)))
        with self._write() as con:
            ids = [r[0] for r in con.execute(
                "SELECT run_id FROM runs WHERE status = 'charged' AND created_at <= ? "
                "ORDER BY created_at" + self._lock, (cutoff,))]
            for run_id in ids:
                con.execute("UPDATE runs SET status = 'failed', error = ?, finished_at = ? "
                            "WHERE run_id = ?",
                            (f"stale: still running after {older_than_seconds:g} s "
                             "(process killed or crashed?); the charge is kept",
                             _stamp(now), run_id))
        return ids

    # -- workspaces ----------------------------------------------------------------

    @staticmethod
    def _workspace_key(dataset, account, name) -> tuple[str, str, str]:
        _check_name(dataset)
        if account != ANONYMOUS:
            check_account_name(account, "a workspace's account")
        if (not isinstance(name, str) or not name.strip() or name != name.strip()
                or len(name) > MAX_NAME_LENGTH or not name.isprintable()):
            raise ParameterError(f"a workspace name must be printable text of 1 to "
                                 f"{MAX_NAME_LENGTH} characters without outer spaces; "
                                 f"got {name!r}")
        return dataset, account, name

    @staticmethod
    def _workspace_record(row) -> WorkspaceRecord:
        return WorkspaceRecord(dataset=row["dataset"], role=row["role"], name=row["name"],
                               workspace_json=row["workspace_json"],
                               created_at=row["created_at"], updated_at=row["updated_at"],
                               revision=int(row["revision"]), account=row["account"])

    def _workspace_access(self, con, key: tuple[str, str, str], reader: str | None) -> str:
        """Check that ``reader`` may open the workspace ``key``; return the role to record.

        The account that owns a workspace may; so may a colleague it was shared with
        (:meth:`share_workspace`); nobody else. The anonymous pseudo-account exists on
        public demo datasets only (visitors who did not sign in reach no other data).
        """
        dataset, account, name = key
        ds = self._dataset_row(con, dataset)
        reader = account if reader is None else reader
        if reader == ANONYMOUS or account == ANONYMOUS:
            if not ds["public_demo"]:
                raise ParameterError(f"dataset {dataset!r} is private: its workspaces belong "
                                     "to signed-in accounts")
            if reader != account:
                raise ParameterError(f"workspace {name!r} is not shared with {reader!r}")
            return "analyst"
        check_account_name(reader, "the reading account")
        row = self._account_row(con, reader)
        if row["disabled_at"] is not None:
            raise ParameterError(f"account {reader!r} is disabled")
        if reader != account and con.execute(
                "SELECT 1 FROM workspace_shares WHERE dataset = ? AND account = ? AND name = ? "
                "AND colleague = ?", (*key, reader)).fetchone() is None:
            raise ParameterError(f"workspace {name!r} of {account!r} is not shared with "
                                 f"{reader!r}; its owner can share it explicitly")
        return self._account_row(con, account)["role"]

    def save_workspace(self, dataset: str, account: str, name: str, workspace_json: str, *,
                       expected_revision: int | None = None,
                       reader: str | None = None) -> WorkspaceRecord:
        """Create or replace the workspace ``(dataset, account, name)``; return it as stored.

        Workspaces are mutable user state (not append-only like charges): saving again
        replaces the JSON and the ``updated_at`` time and adds one to ``revision``;
        ``created_at`` stays. The ledger checks the form only (a JSON object naming no
        other dataset, at most :data:`~dpcore.privacy.ledger.records.MAX_WORKSPACE_CHARS`
        characters); what it may hold is checked by :mod:`dpcore.redescriptions.workspace`.

        Parameters
        ----------
        dataset, account, name : str
            The workspace's key: ``account`` owns it (:data:`ANONYMOUS` for visitors who
            did not sign in, on public demo data only).
        workspace_json : str
            The workspace as a JSON object.
        expected_revision : int, optional
            Optimistic concurrency: the revision this save is based on (the
            :attr:`~dpcore.privacy.ledger.records.WorkspaceRecord.revision` read or last
            saved; 0 when no workspace existed then). The save happens only if the stored
            revision is still that one, checked and written in one statement, so of two
            tabs saving on the same revision exactly one wins. None (the default)
            overwrites whatever is stored: an explicit "overwrite".
        reader : str, optional
            The signed-in account that saves (default ``account``): ``account`` itself or a
            colleague it was shared with; anybody else is refused.

        Raises
        ------
        WorkspaceConflict
            The stored workspace moved on from ``expected_revision`` (saved or deleted
            elsewhere); it carries the stored revision and time; nothing is written.
        ParameterError
            Unknown dataset, bad account or name, a reader it is not shared with, text that
            is not a JSON object, too long, naming another dataset, or a bad
            ``expected_revision``; nothing is written.
        """
        dataset, account, name = self._workspace_key(dataset, account, name)
        if expected_revision is not None and (
                isinstance(expected_revision, bool)
                or not isinstance(expected_revision, numbers.Integral)
                or expected_revision < 0):
            raise ParameterError(f"expected_revision must be a whole number ≥ 0 or None; "
                                 f"got {expected_revision!r}")
        if not isinstance(workspace_json, str):
            raise ParameterError("workspace_json must be JSON text")
        if len(workspace_json) > MAX_WORKSPACE_CHARS:
            raise ParameterError(f"a workspace may hold at most {MAX_WORKSPACE_CHARS} "
                                 f"characters of JSON; got {len(workspace_json)}")
        try:
            doc = json.loads(workspace_json)
        except ValueError as exc:
            raise ParameterError(f"workspace_json is not valid JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise ParameterError("workspace_json must be a JSON object")
        if doc.get("dataset", dataset) != dataset:
            raise ParameterError(f"the workspace names dataset {doc.get('dataset')!r}, "
                                 f"not {dataset!r}")
        now = _stamp(_now())
        key = (dataset, account, name)
        where = "WHERE dataset = ? AND account = ? AND name = ?"
        with self._write() as con:
            role = self._workspace_access(con, key, reader)
            if expected_revision is None:
                con.execute("INSERT INTO workspaces (dataset, account, name, workspace_json, "
                            "created_at, updated_at, revision, role) "
                            "VALUES (?, ?, ?, ?, ?, ?, 1, ?) "
                            "ON CONFLICT (dataset, account, name) DO UPDATE SET "
                            "workspace_json = excluded.workspace_json, "
                            "updated_at = excluded.updated_at, "
                            "revision = workspaces.revision + 1",
                            (*key, workspace_json, now, now, role))
                written = 1
            elif expected_revision == 0:
                # Create only. On PostgreSQL a concurrent creator's row makes this wait
                # for its commit, then do nothing.
                written = con.execute(
                    "INSERT INTO workspaces (dataset, account, name, workspace_json, "
                    "created_at, updated_at, revision, role) VALUES (?, ?, ?, ?, ?, ?, 1, ?) "
                    "ON CONFLICT (dataset, account, name) DO NOTHING",
                    (*key, workspace_json, now, now, role)).rowcount
            else:
                # Compare and set in one statement: on PostgreSQL a concurrent update of the
                # row makes this wait and then re-check the revision on the new row.
                written = con.execute(
                    "UPDATE workspaces SET workspace_json = ?, updated_at = ?, "
                    f"revision = revision + 1 {where} AND revision = ?",
                    (workspace_json, now, *key, int(expected_revision))).rowcount
            row = con.execute(f"SELECT * FROM workspaces {where}", key).fetchone()
            if written != 1:
                raise WorkspaceConflict(name, int(expected_revision),
                                        None if row is None else int(row["revision"]),
                                        None if row is None else row["updated_at"])
        return self._workspace_record(row)

    def get_workspace(self, dataset: str, account: str, name: str, *,
                      reader: str | None = None) -> WorkspaceRecord | None:
        """The workspace ``(dataset, account, name)``, or None if none was saved.

        ``reader`` (default ``account``) must own it or be a colleague it was shared with.

        Raises
        ------
        ParameterError
            Unknown dataset, bad account or name, a reader it is not shared with.
        """
        key = self._workspace_key(dataset, account, name)
        with self._read() as con:
            self._workspace_access(con, key, reader)
            row = con.execute("SELECT * FROM workspaces WHERE dataset = ? AND account = ? "
                              "AND name = ?", key).fetchone()
        return None if row is None else self._workspace_record(row)

    def list_workspaces(self, dataset: str, account: str | None = None
                        ) -> list[WorkspaceRecord]:
        """The dataset's workspaces (only ``account``'s when given), by account then name.

        Lists every account's workspaces when ``account`` is None: for the owner's tools.
        """
        _check_name(dataset)
        sql, args = "SELECT * FROM workspaces WHERE dataset = ?", [dataset]
        if account is not None:
            self._workspace_key(dataset, account, "x")
            sql += " AND account = ?"
            args.append(account)
        with self._read() as con:
            self._dataset_row(con, dataset)
            rows = con.execute(sql + " ORDER BY account, name", args).fetchall()
        return [self._workspace_record(r) for r in rows]

    def delete_workspace(self, dataset: str, account: str, name: str) -> bool:
        """Delete the workspace ``(dataset, account, name)`` (and its shares); whether there
        was one. Only its owning account deletes it."""
        key = self._workspace_key(dataset, account, name)
        with self._write() as con:
            self._workspace_access(con, key, None)
            found = con.execute("SELECT 1 FROM workspaces WHERE dataset = ? AND account = ? "
                                "AND name = ?" + self._lock, key).fetchone()
            if found is not None:
                con.execute("DELETE FROM workspace_shares WHERE dataset = ? AND account = ? "
                            "AND name = ?", key)
                con.execute("DELETE FROM workspaces WHERE dataset = ? AND account = ? "
                            "AND name = ?", key)
        return found is not None

    def share_workspace(self, dataset: str, account: str, name: str, colleague: str) -> None:
        """Share the workspace ``(dataset, account, name)`` with a named colleague.

        The explicit act of its owning account: afterwards ``colleague`` may open and save
        it (:meth:`get_workspace` / :meth:`save_workspace` with ``reader=colleague``).
        Sharing twice changes nothing.

        Raises
        ------
        ParameterError
            Unknown dataset, workspace or colleague, a disabled colleague, or the anonymous
            pseudo-account.
        """
        key = self._workspace_key(dataset, account, name)
        if ANONYMOUS in (account, colleague):
            raise ParameterError("only workspaces of signed-in accounts can be shared")
        check_account_name(colleague, "colleague")
        with self._write() as con:
            self._workspace_access(con, key, None)
            if con.execute("SELECT 1 FROM workspaces WHERE dataset = ? AND account = ? "
                           "AND name = ?", key).fetchone() is None:
                raise ParameterError(f"{account!r} has no workspace {name!r} on {dataset!r}")
            if self._account_row(con, colleague)["disabled_at"] is not None:
                raise ParameterError(f"account {colleague!r} is disabled")
            con.execute("INSERT INTO workspace_shares (dataset, account, name, colleague, "
                        "created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                        (*key, colleague, _stamp(_now())))

    def unshare_workspace(self, dataset: str, account: str, name: str, colleague: str) -> bool:
        """Take a share back; whether there was one."""
        key = self._workspace_key(dataset, account, name)
        with self._write() as con:
            return con.execute("DELETE FROM workspace_shares WHERE dataset = ? AND account = ? "
                               "AND name = ? AND colleague = ?",
                               (*key, colleague)).rowcount > 0

    def workspaces_shared_with(self, dataset: str, colleague: str) -> list[WorkspaceRecord]:
        """The workspaces of ``dataset`` other accounts shared with ``colleague``."""
        _check_name(dataset)
        check_account_name(colleague, "colleague")
        with self._read() as con:
            rows = con.execute("SELECT w.* FROM workspaces w JOIN workspace_shares s ON "
                               "s.dataset = w.dataset AND s.account = w.account AND "
                               "s.name = w.name WHERE w.dataset = ? AND s.colleague = ? "
                               "ORDER BY w.account, w.name", (dataset, colleague)).fetchall()
        return [self._workspace_record(r) for r in rows]

    # -- audit ---------------------------------------------------------------------

    def audit_log(self, dataset: str | None = None) -> list[AuditEntry]:
        """Every charge with its run's state, oldest first (optionally for one dataset)."""
        sql = ("SELECT c.id, c.created_at, c.actor, c.dataset, c.run_id, c.algorithm, "
               "c.epsilon_nano, c.parts_json, c.params_json, r.status, r.finished_at, r.error, "
               "c.account, COALESCE(f.epsilon_nano, 0) AS refunded_nano "
               "FROM charges c LEFT JOIN runs r ON r.run_id = c.run_id "
               "LEFT JOIN refunds f ON f.run_id = c.run_id")
        args: tuple = ()
        if dataset is not None:
            _check_name(dataset)
            sql += " WHERE c.dataset = ?"
            args = (dataset,)
        with self._read() as con:
            if dataset is not None:
                self._dataset_row(con, dataset)
            rows = con.execute(sql + " ORDER BY c.id", args).fetchall()
        return [AuditEntry(charge_id=r["id"], created_at=r["created_at"], actor=r["actor"],
                           dataset=r["dataset"], run_id=r["run_id"], algorithm=r["algorithm"],
                           epsilon_nano=r["epsilon_nano"],
                           parts_nano=tuple(json.loads(r["parts_json"])),
                           params=json.loads(r["params_json"]), status=r["status"],
                           finished_at=r["finished_at"], error=r["error"],
                           account=r["account"], refunded_nano=int(r["refunded_nano"]))
                for r in rows]

    # -- owner logins --------------------------------------------------------------

    def record_auth_event(self, *, actor: str, entry: str, outcome: str,
                          detail: str | None = None, account: str | None = None,
                          client: str | None = None) -> None:
        """Append one owner-login attempt to the login log (never the password).

        Written under the login lock, like :meth:`login_attempt` (which the login itself
        uses, so that reading the back-off and recording the attempt are one step).

        Parameters
        ----------
        actor : str
            Free label of who tried (e.g. a session or user name).
        entry : str
            Entry point: ``app``, ``cli``, ...
        outcome : {"success", "failure", "throttled"}
        detail : str, optional
        account, client : str, optional
            The account the attempt named and the client it came from.
        """
        _check_text(actor, "actor")
        _check_text(entry, "entry")
        if outcome not in ("success", "failure", "throttled"):
            raise ParameterError(f"outcome must be success, failure or throttled; got {outcome!r}")
        self.login_attempt(lambda events: (outcome, detail), actor=actor, entry=entry,
                           since_seconds=0.0, account=account, client=client)

    def login_attempt(self, decide: Callable[[list[AuthEvent]], tuple[str, str | None]], *,
                      actor: str, entry: str, since_seconds: float,
                      account: str | None = None, client: str | None = None) -> AuthEvent:
        """Read the login log, decide an owner-login attempt and record it: one atomic step.

        One write transaction holding the login lock (SQLite: ``BEGIN IMMEDIATE``, the
        database's write lock; PostgreSQL: a transaction-scoped advisory lock): the recent
        events are read, ``decide(events)`` runs (it may check the password), and its
        outcome is appended. Every process and server sharing this ledger therefore sees
        each earlier attempt before deciding its own, so no two attempts can both read
        "no back-off" (docs/PRIVACY.md, owner logins).

        Parameters
        ----------
        decide : callable
            ``decide(events) -> (outcome, detail)`` with ``events`` the attempts of the
            last ``since_seconds``, oldest first, and ``outcome`` one of ``success``,
            ``failure``, ``throttled``. It runs while the lock is held: keep it short
            (one password check). If it raises, nothing is recorded.
        actor, entry : str
            Who tries and through which entry point (see :meth:`record_auth_event`).
        account, client : str, optional
            The account the attempt names and the client it comes from (recorded, so that
            the back-off can be judged per account and per client).
        since_seconds : float
            How far back (from now) ``decide`` needs the log; ≥ 0.

        Returns
        -------
        AuthEvent
            The attempt as recorded (its time stamped after ``decide`` returned).

        Raises
        ------
        ParameterError
            Empty ``actor`` or ``entry``, a bad ``since_seconds``, or ``decide`` returned an
            unknown outcome; nothing is recorded.
        """
        _check_text(actor, "actor")
        _check_text(entry, "entry")
        if (isinstance(since_seconds, bool) or not isinstance(since_seconds, numbers.Real)
                or not math.isfinite(since_seconds) or since_seconds < 0):
            raise ParameterError(f"since_seconds must be a finite number ≥ 0; "
                                 f"got {since_seconds!r}")
        with self._write() as con:
            self._backend.lock_logins(con)
            rows = con.execute("SELECT * FROM auth_events WHERE created_at >= ? ORDER BY id",
                               (_stamp(_now() - timedelta(seconds=float(since_seconds))),)
                               ).fetchall()
            outcome, detail = decide([self._auth_event(r) for r in rows])
            if outcome not in ("success", "failure", "throttled"):
                raise ParameterError(f"outcome must be success, failure or throttled; "
                                     f"got {outcome!r}")
            row = con.execute("INSERT INTO auth_events (created_at, actor, entry, outcome, "
                              "detail, account, client) VALUES (?, ?, ?, ?, ?, ?, ?) "
                              "RETURNING *", (_stamp(_now()), actor, entry, outcome, detail,
                                              account, client)).fetchone()
        return self._auth_event(row)

    @staticmethod
    def _auth_event(row) -> AuthEvent:
        return AuthEvent(id=row["id"], created_at=row["created_at"], actor=row["actor"],
                         entry=row["entry"], outcome=row["outcome"], detail=row["detail"],
                         account=row["account"], client=row["client"])

    def auth_events(self, *, since_seconds: float | None = None) -> list[AuthEvent]:
        """Owner-login attempts, oldest first (optionally only the last ``since_seconds``)."""
        sql, args = "SELECT * FROM auth_events", ()
        if since_seconds is not None:
            sql += " WHERE created_at >= ?"
            args = (_stamp(_now() - timedelta(seconds=float(since_seconds))),)
        with self._read() as con:
            rows = con.execute(sql + " ORDER BY id", args).fetchall()
        return [self._auth_event(r) for r in rows]
