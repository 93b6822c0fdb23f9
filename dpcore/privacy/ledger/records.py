"""The ledger's records: frozen values it returns (datasets, budgets, charges, runs, logs).

Amounts are integer nano-ε (:mod:`dpcore.privacy.units`); the ``epsilon`` properties are for
display only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpcore.privacy.units import nano_to_epsilon
from dpcore.registry import KIND_TWO_VIEW

__all__ = ["RUN_STATUSES", "AUDIENCES", "MAX_NAME_LENGTH", "DatasetRecord", "DatasetCard",
           "BudgetStatus", "ChargeRecord", "RunRecord", "AuthEvent", "AuditEntry",
           "WorkspaceRecord", "MAX_WORKSPACE_CHARS", "AccountRecord", "QuotaStatus"]

RUN_STATUSES = ("charged", "done", "failed")
#: Who may read a run's stored result: everyone with access to the dataset, or its owner.
AUDIENCES = ("everyone", "owner")
MAX_NAME_LENGTH = 128
#: Largest workspace JSON the ledger stores (characters): far above any real one.
MAX_WORKSPACE_CHARS = 2_000_000


@dataclass(frozen=True)
class DatasetRecord:
    """A registered dataset.

    Attributes
    ----------
    name : str
        Dataset name (primary key).
    schema : Schema, SequenceSchema or TableSchema
        The public schema (what may be known without spending ε), of the dataset's kind:
        :class:`dpcore.data.schema.Schema` (two-view),
        :class:`dpcore.data.sequences.schema.SequenceSchema` (sequences) or
        :class:`dpcore.data.table.schema.TableSchema` (labelled table).
    source_path : str or None
        Where the data lives. **Owner-only**: never show it to analysts.
    public_demo : bool
        Synthetic or public data: true statistics may be shown to everyone.
    confirmed : bool
        The owner confirmed the public schema; runs are refused until then.
    sandbox_of : str or None
        Name of the real dataset this sandbox copies, or None for a real dataset.
    created_at : str
        ISO 8601 UTC time of registration.
    content_digest : str or None
        SHA-256 of the registered data's content (see
        :func:`dpcore.privacy.policy.content_digest`); None for datasets registered before
        digests existed, until their first run records it. **Owner-only** (a digest
        of private data lets anyone holding a guess of the data confirm it).
    kind : str
        The dataset kind (:data:`dpcore.registry.DATASET_KINDS`): which family's algorithms
        may mine it. Fixed at registration.
    row_bound : int or None
        Public: the owner's declared upper bound on the rows (two-view, labelled table) or
        items (sequences) of the registered data (:meth:`Ledger.declare_row_bound`); None if
        none was declared. What the Dask preflight sizes memory from.
    """

    name: str
    schema: Any
    source_path: str | None
    public_demo: bool
    confirmed: bool
    sandbox_of: str | None
    created_at: str
    content_digest: str | None = None
    kind: str = KIND_TWO_VIEW
    row_bound: int | None = None

    @property
    def is_sandbox(self) -> bool:
        """True for an owner sandbox (own budget, same data as ``sandbox_of``)."""
        return self.sandbox_of is not None

    def card(self) -> DatasetCard:
        """The public dataset card of this record (no data location, no content digest)."""
        return DatasetCard(name=self.name, schema=self.schema, public_demo=self.public_demo,
                           confirmed=self.confirmed, sandbox_of=self.sandbox_of,
                           created_at=self.created_at, kind=self.kind)


@dataclass(frozen=True)
class DatasetCard:
    """What anybody may know about a registered dataset: its public card.

    The :class:`DatasetRecord` without the two owner-only fields: no ``source_path`` (where
    the raw data lives) and no ``content_digest`` (a digest of private data confirms a
    guess of it offline). :meth:`dpcore.privacy.ledger.Ledger.dataset_card` returns it.
    """

    name: str
    schema: Any
    public_demo: bool
    confirmed: bool
    sandbox_of: str | None
    created_at: str
    kind: str = KIND_TWO_VIEW

    @property
    def is_sandbox(self) -> bool:
        """True for an owner sandbox (own budget, same data as ``sandbox_of``)."""
        return self.sandbox_of is not None


@dataclass(frozen=True)
class BudgetStatus:
    """A dataset's budget as read from the ledger, in integer nano-ε.

    Attributes
    ----------
    cap_nano, spent_nano, remaining_nano : int
        Current cap, the sum of all charges minus the sum of all refunds (what runs
        actually spent), and ``cap_nano − spent_nano``.
    refunded_nano : int
        The sum of all refunds: charged parts that runs never spent, returned to the cap
        (ledger version 7). ``spent_nano + refunded_nano`` is the sum of all charges.
    """

    cap_nano: int
    spent_nano: int
    remaining_nano: int
    refunded_nano: int = 0

    @property
    def cap(self) -> float:
        """Cap in ε (display only)."""
        return nano_to_epsilon(self.cap_nano)

    @property
    def spent(self) -> float:
        """Spent ε (display only)."""
        return nano_to_epsilon(self.spent_nano)

    @property
    def remaining(self) -> float:
        """Remaining ε (display only)."""
        return nano_to_epsilon(self.remaining_nano)

    def fits(self, epsilon_nano: int) -> bool:
        """Whether a run costing ``epsilon_nano`` fits in what remains (as of this reading)."""
        return 0 < int(epsilon_nano) <= self.remaining_nano


@dataclass(frozen=True)
class ChargeRecord:
    """One charge: the ε a run paid before drawing any noise.

    Attributes
    ----------
    id : int
        Charge sequence number (audit order).
    run_id, dataset, algorithm, actor : str
    epsilon_nano : int
        Total charged; equals ``sum(parts_nano)``.
    parts_nano : tuple of int
        The ε split among the run's mechanisms, in nano-ε.
    params : dict
        Run parameters as given.
    created_at : str
        ISO 8601 UTC.
    replayed : bool
        True when this run id had been charged before and the existing charge
        was returned (nothing new was charged).
    account : str or None
        The signed-in account that spent (None: before accounts, or a ledger without any).
    params_digest : str or None
        SHA-256 (hex) of the recorded parameters' canonical JSON (None before version 6).
    """

    id: int
    run_id: str
    dataset: str
    algorithm: str
    epsilon_nano: int
    parts_nano: tuple[int, ...]
    params: dict
    actor: str
    created_at: str
    replayed: bool = False
    account: str | None = None
    params_digest: str | None = None

    @property
    def epsilon(self) -> float:
        """Total charged ε (display only)."""
        return nano_to_epsilon(self.epsilon_nano)


@dataclass(frozen=True)
class RunRecord:
    """A run and its state: ``charged`` → ``done`` | ``failed``.

    ``error`` is the failure message (None unless failed). ``epsilon_nano`` is what the run
    was charged, ``refunded_nano`` the part of it returned when its result was stored
    (ledger version 7); the run spent the difference (:attr:`spent_nano`).
    """

    run_id: str
    dataset: str
    algorithm: str
    status: str
    epsilon_nano: int
    params: dict
    error: str | None
    created_at: str
    finished_at: str | None
    audience: str = "everyone"
    account: str | None = None
    refunded_nano: int = 0

    @property
    def epsilon(self) -> float:
        return nano_to_epsilon(self.epsilon_nano)

    @property
    def spent_nano(self) -> int:
        """What the run spent: its charge minus its refund."""
        return self.epsilon_nano - self.refunded_nano


@dataclass(frozen=True)
class AuthEvent:
    """One sign-in attempt: when, by whom (a free label), from which entry point.

    ``outcome`` is ``success``, ``failure`` (wrong password) or ``throttled``
    (refused unchecked during a back-off). ``account`` is the account the attempt named
    and ``client`` the client it came from (version 6; None before).
    """

    id: int
    created_at: str
    actor: str
    entry: str
    outcome: str
    detail: str | None
    account: str | None = None
    client: str | None = None


@dataclass(frozen=True)
class AuditEntry:
    """One line of the audit log (a charge joined with its run): who spent what, when."""

    charge_id: int
    created_at: str
    actor: str
    dataset: str
    run_id: str
    algorithm: str
    epsilon_nano: int
    parts_nano: tuple[int, ...]
    params: dict
    status: str
    finished_at: str | None
    error: str | None
    account: str | None = None
    refunded_nano: int = 0

    @property
    def epsilon(self) -> float:
        return nano_to_epsilon(self.epsilon_nano)


@dataclass(frozen=True)
class WorkspaceRecord:
    """An analyst's saved Explore workspace (mutable user state, not a privacy record).

    Attributes
    ----------
    dataset : str
        The dataset it belongs to.
    role : str
        ``analyst`` or ``owner``: the role of the account that saved it.
    name : str
        The workspace's name (unique per dataset and account).
    workspace_json : str
        The workspace (:mod:`dpcore.redescriptions.workspace`) as JSON: decisions, tags,
        notes and settings about released redescriptions only.
    created_at, updated_at : str
        ISO 8601 UTC times of the first and the latest save.
    revision : int
        1 for the first save, one more with each save since (ledger version 5): a save
        based on an older revision is refused (:class:`~dpcore.errors.WorkspaceConflict`).
    """

    dataset: str
    role: str
    name: str
    workspace_json: str
    created_at: str
    updated_at: str
    revision: int = 1
    account: str = ""


@dataclass(frozen=True)
class AccountRecord:
    """A person who may sign in (never the password hash: it stays in the ledger).

    Attributes
    ----------
    name : str
        Account name (primary key; recorded with every charge it makes).
    role : str
        ``analyst`` or ``owner``.
    has_password : bool
        A scrypt password hash is stored.
    external_identity : str or None
        A verified identity (``issuer|subject`` of an OpenID Connect provider) that signs
        in as this account.
    created_by, created_at : str
    disabled_at : str or None
        When the account was disabled (it can never sign in or spend again).
    """

    name: str
    role: str
    has_password: bool
    external_identity: str | None
    created_by: str
    created_at: str
    disabled_at: str | None = None

    @property
    def active(self) -> bool:
        """Whether the account may sign in and spend."""
        return self.disabled_at is None


@dataclass(frozen=True)
class QuotaStatus:
    """One account's share of one dataset's cap, in integer nano-ε.

    Attributes
    ----------
    quota_nano : int or None
        The share the owner gave (None: no quota, the account is limited by the cap only).
    spent_nano : int
        What the account has spent on the dataset.
    dataset : BudgetStatus
        The dataset's own cap, spent and remaining.
    """

    quota_nano: int | None
    spent_nano: int
    dataset: BudgetStatus

    @property
    def remaining_nano(self) -> int:
        """What the account may still spend: the smaller of its share's rest and the cap's."""
        rest = self.dataset.remaining_nano
        if self.quota_nano is not None:
            rest = min(rest, self.quota_nano - self.spent_nano)
        return max(rest, 0)

    @property
    def quota(self) -> float | None:
        """The share in ε (display only)."""
        return None if self.quota_nano is None else nano_to_epsilon(self.quota_nano)

    @property
    def spent(self) -> float:
        """Spent ε by this account (display only)."""
        return nano_to_epsilon(self.spent_nano)

    @property
    def remaining(self) -> float:
        """Remaining ε for this account (display only)."""
        return nano_to_epsilon(self.remaining_nano)
