"""The privacy ledger: datasets, budgets, charges, runs and results, in SQLite or PostgreSQL.

Modules, one concept each: :mod:`~dpcore.privacy.ledger.records` (the frozen records
the ledger returns), :mod:`~dpcore.privacy.ledger.migrations` (the SQL schema, one migration
per version; :mod:`~dpcore.privacy.ledger.postgres_migrations` the same in PostgreSQL's
dialect), :mod:`~dpcore.privacy.ledger.store` (:class:`Ledger`: every read and write, SQL
written once), :mod:`~dpcore.privacy.ledger.backends` (a location → its backend:
:mod:`~dpcore.privacy.ledger.sqlite_backend` or
:mod:`~dpcore.privacy.ledger.postgres_backend`, which own connections, transactions and
locking), :mod:`~dpcore.privacy.ledger.copying` (copy a whole ledger to another backend);
:mod:`~dpcore.privacy.ledger.schemas` stores public schemas as JSON. Import everything
from ``dpcore.privacy.ledger``.

Every ε a dataset spends is recorded here, and the budget meter, the run
launcher and the command line all read it from here (never from session state).

Guarantees
----------
* **Charge before noise.** :meth:`Ledger.charge` runs one transaction that first takes
  a lock (SQLite: ``BEGIN IMMEDIATE``, the database write lock; PostgreSQL: the dataset's
  row, ``SELECT … FOR UPDATE``), reads the cap and the sum of all charges, and either
  refuses with :class:`~dpcore.errors.BudgetExceededError` (nothing written) or inserts
  the charge and the run. Any number of threads, processes and app servers may race; the
  sum of the charges never exceeds the cap.
* **Exact arithmetic.** ε is stored as integer nano-ε (see :mod:`dpcore.privacy.units`);
  caps are rounded down, spends are given as integers by the caller (normally
  the parts of :func:`dpcore.redescriptions.params.plan_budget`), so ω-splits add up exactly.
* **Append-only, never refunded.** Triggers make ``charges`` (and the cap
  history in ``budgets``) reject ``UPDATE`` and ``DELETE`` (and ``TRUNCATE`` on
  PostgreSQL). A run's status goes
  once from ``charged`` to ``done`` or ``failed``; a failed run keeps its charge.
* **Idempotent per run id.** ``UNIQUE(run_id)``: charging the same run twice
  (a double click, a Streamlit rerun) returns the first charge.
* **Workspaces are user state.** ``workspaces`` (version 4) holds each analyst's Explore
  workspace (decisions, tags, notes, settings about released redescriptions) per dataset,
  role and name; it is updated and deleted freely and spends nothing. Each save bumps its
  ``revision`` (version 5), and a save based on an older revision is refused, so two tabs
  never overwrite each other silently.
* **Who spends.** ``accounts`` (version 6) are the people who may sign in; every charge
  records the account that spent, and an analyst's share of a dataset's cap (``quotas``)
  is checked in the same transaction as the cap: neither is ever exceeded. A run id is
  bound to the digest of its parameters, so it can only be resumed with the same ones.
* **Results before display.** :meth:`Ledger.store_result` writes the DP release
  and marks the run ``done`` in one transaction, so a reload, a second tab or a
  crash loses no paid-for result, and a crash mid-write leaves no partial row.

Connections
-----------
A new connection is opened for every operation and closed afterwards; a :class:`Ledger`
object holds only its location, so one may be shared between threads (Streamlit sessions),
but a connection never is. SQLite settings: ``isolation_level=None``,
``journal_mode=WAL``, ``synchronous=FULL``, ``foreign_keys=ON``, ``busy_timeout=30000``;
keep the file on a local disk (WAL does not work on network file systems). Several app
servers share one ledger through PostgreSQL.

Location
--------
``Ledger(location)`` or ``Ledger.open(location)``: a SQLite file path (or ``sqlite:PATH``)
or ``postgresql://user:password@host:port/database``; without one the environment
variable ``DPRM_LEDGER``; without that ``~/.local/share/dprm/ledger.sqlite`` (outside the
repository).

What an analyst may see
-----------------------
Result JSON (:meth:`Ledger.get_result`) is a DP release; budgets, charges and
public schemas are public metadata. ``source_path`` of a dataset and the
``diagnostics_json`` of a result (MCMC score traces computed from true data)
are **owner-only**; the caller must withhold them from analysts (see
:func:`dpcore.privacy.roles.can_see_true_statistics`). Sandbox datasets (owner demos
with their own budget) run on the real data and are meant for owners only.
"""

from dpcore.privacy.ledger.migrations import SCHEMA_VERSION
from dpcore.privacy.ledger.migrations import _migrate_v1 as _migrate_v1  # migration tests
from dpcore.privacy.ledger.migrations import _migrate_v2 as _migrate_v2  # migration tests
from dpcore.privacy.ledger.migrations import _migrate_v3 as _migrate_v3  # migration tests
from dpcore.privacy.ledger.migrations import _migrate_v4 as _migrate_v4  # migration tests
from dpcore.privacy.ledger.records import (
    AUDIENCES,
    MAX_NAME_LENGTH,
    RUN_STATUSES,
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
from dpcore.privacy.ledger.schemas import _schema_from_json as _schema_from_json
from dpcore.privacy.ledger.schemas import _schema_to_json as _schema_to_json
from dpcore.privacy.ledger.store import (
    ANONYMOUS,
    DEFAULT_PATH,
    ENV_VAR,
    Ledger,
    check_account_name,
    digest_params,
)

__all__ = [
    "ENV_VAR", "DEFAULT_PATH", "SCHEMA_VERSION", "RUN_STATUSES",
    "Ledger", "DatasetRecord", "BudgetStatus", "ChargeRecord", "RunRecord", "AuditEntry",
    "AuthEvent", "AUDIENCES", "MAX_NAME_LENGTH", "WorkspaceRecord", "AccountRecord",
    "QuotaStatus", "DatasetCard", "ANONYMOUS", "check_account_name", "digest_params",
]
