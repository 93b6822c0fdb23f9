"""The privacy policy: one set of rules every charged run and every result read passes.

The app, the command line, the Python API (:func:`dpcore.runs.charge_and_mine`,
:func:`dpcore.runs.load_result`) and the experiment harness all ask this module
before anything is charged or shown. The rules depend only on the requester's
role and the dataset's registered flags (``public_demo``, sandbox), never on the
entry point, so no entry point can do what another refuses.

Rules (each is refused with :class:`PolicyError` before any charge)
-------------------------------------------------------------------
* **Seeds only on public data.** A fixed seed makes the noise reproducible:
  anyone who knows it can replay the run on a made-up dataset of the same schema
  and subtract the noise from the release. So a seed is accepted only on datasets
  flagged ``public_demo``; private datasets always draw from fresh entropy (see
  :meth:`RunPermit.rng`), and no seed is stored or exported for them.
* **Faithful mode on private data is for the owner, and so are its results.**
  Faithful mode reproduces a paper's code, which reads raw data unpaid (for
  example split thresholds that are exact data values). On a private dataset
  only the owner may launch it, and its stored result has audience ``owner``:
  :func:`can_read` refuses it to analysts everywhere.
* **No float noise in strict mode.** Textbook floating-point Laplace noise at full
  precision is open to Mironov's (2012) attack; strict mode draws integer noise
  only (the redescription types' ``validate()`` refuses ``noise="continuous"``
  with ``mode="strict"``).
* **The data mined is the registered data.** Registration records a SHA-256
  digest of the dataset's content (:func:`content_digest`); a run whose data
  has another digest is refused. Datasets registered before digests existed
  record theirs at the first run (trust on first use).
* **Everything that can fail is checked first**: parameters and the budget plan
  here, then (in :func:`dpcore.runs.charge_and_mine`) the public grids the miner
  will build and loading the data. Only then is the ledger charged.
* **Owner sandboxes** (demo copies with their own budget) run on the real data,
  so only the owner may run them unless the data is a public demo.

The neighbouring relation behind every ε is :data:`NEIGHBOURING_RELATION`
(add or remove one row); under replace-one-row neighbours every ε doubles.
"""

from __future__ import annotations

import hashlib
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dpcore.data.dataset import TwoViewDataset, known_digest, two_view_digest
from dpcore.data.kinds import kind_of_data
from dpcore.errors import DpcoreError, ParameterError
from dpcore.privacy.accounts import SignedIn
from dpcore.privacy.ledger import DatasetRecord
from dpcore.privacy.randomness import run_generator
from dpcore.privacy.roles import ANALYST, OWNER, ROLES, can_see_true_statistics
from dpcore.registry import FAITHFUL, MODES, STRICT, algorithm_spec

__all__ = ["PolicyError", "Requester", "RunPermit", "NEIGHBOURING_RELATION", "allowed_modes",
           "seed_allowed", "authorize_run", "can_read", "content_digest", "EVERYONE",
           "OWNER_ONLY", "MAX_SEED", "recorded_params", "check_account_needed",
           "checked_requester"]

#: The neighbouring relation every ε of this project refers to. Under replace-one-row
#: neighbours (change one row's values) every ε doubles. Recorded in every run.
NEIGHBOURING_RELATION = ("add/remove one row (datasets differ by one entity's row); "
                         "under replace-one-row neighbours every ε doubles")

#: Audiences of a stored result (the ledger's ``runs.audience``).
EVERYONE, OWNER_ONLY = "everyone", "owner"
#: Seeds are non-negative integers below this (NumPy's SeedSequence takes any size;
#: the bound keeps them exact in JSON and SQLite).
MAX_SEED = 2**63


class PolicyError(ParameterError):
    """The privacy policy refuses a request; nothing was charged or shown."""


@dataclass(frozen=True)
class Requester:
    """Who asks: a role, a label for the audit log, and the signed-in session if any.

    The role is not taken on the caller's word: ``owner`` needs a :class:`SignedIn`
    session of an owner account (:func:`dpcore.privacy.accounts.sign_in`), and a session
    is only accepted if this process signed it in (its seal). Without a session a
    requester is an anonymous analyst: public demo data, or a ledger without accounts.

    Attributes
    ----------
    role : {"analyst", "owner"}
    actor : str
        Free label of the entry point (audit log).
    session : SignedIn or None
        The signed-in account; its name is recorded with every charge.
    """

    role: str = ANALYST
    actor: str = ANALYST
    session: SignedIn | None = None

    def __post_init__(self):
        if self.role not in ROLES:
            raise PolicyError(f"role must be one of {', '.join(ROLES)}; got {self.role!r}")
        if not isinstance(self.actor, str) or not self.actor.strip():
            raise PolicyError(f"actor must be a non-empty label; got {self.actor!r}")
        if self.session is not None:
            if not isinstance(self.session, SignedIn) or not self.session.valid():
                raise PolicyError("this session was not signed in by this server; sign in "
                                  "with dpcore.privacy.accounts.sign_in")
            if self.session.role != self.role:
                raise PolicyError(f"account {self.session.account!r} is an "
                                  f"{self.session.role}, not an {self.role}")
        elif self.role == OWNER:
            raise PolicyError("the owner role needs a signed-in owner account "
                              "(dpcore.privacy.accounts.sign_in); it is never taken on the "
                              "caller's word")

    @property
    def account(self) -> str | None:
        """The signed-in account's name, or None for an anonymous analyst."""
        return None if self.session is None else self.session.account

    @classmethod
    def signed_in(cls, session: SignedIn, actor: str | None = None) -> Requester:
        """The requester of a signed-in session (its role; ``actor`` defaults to its name)."""
        if not isinstance(session, SignedIn):
            raise PolicyError("session must be a dpcore.privacy.accounts.SignedIn")
        return cls(role=session.role, actor=actor or session.account, session=session)


@dataclass(frozen=True)
class RunPermit:
    """What the policy allowed: the run to charge, its seed and its result's audience.

    Attributes
    ----------
    dataset : DatasetRecord
    params : parameters of a registered algorithm
        Validated; the algorithm's budget plan is what will be charged.
    seed : int or None
        Only ever set on public-demo datasets.
    audience : {"everyone", "owner"}
        Who may read the stored result.
    requester : Requester
    """

    dataset: DatasetRecord
    params: object
    seed: int | None
    audience: str
    requester: Requester

    def rng(self) -> np.random.Generator:
        """The run's random source.

        A seeded generator only on public-demo data; otherwise a ChaCha20 CSPRNG
        keyed from the operating system's CSPRNG, fresh for every run and never
        recorded (:func:`dpcore.privacy.randomness.run_generator` chooses).
        """
        return run_generator(public_demo=self.dataset.public_demo is True, seed=self.seed)


def recorded_params(permit: RunPermit, earlier: Mapping | None = None) -> dict:
    """What the ledger records with a permit's charge (and digests: the run's identity).

    ``earlier``: what the ledger already records for this run id, if it was charged before.
    When a family's stored form of its parameters changed since (the redescription miners
    stored the 26 keys of both families' fields before each family's type was the
    boundary), the earlier dict digests differently although it is the very same run. It
    is returned verbatim, so the run replays with the digest it was charged with, exactly
    when it reads back (through the parameter type's own ``from_dict``) as this permit's
    parameters, seed and neighbouring relation. Any other difference keeps today's dict,
    and the ledger refuses the replay as before: a run id only ever mines the parameters
    it was charged for.
    """
    current = {**permit.params.to_dict(), "seed": permit.seed,
               "neighbouring": NEIGHBOURING_RELATION}
    if earlier is None or dict(earlier) == current or not _same_run(earlier, permit):
        return current
    return dict(earlier)


def _same_run(earlier: Mapping, permit: RunPermit) -> bool:
    """Whether recorded parameters ``earlier`` read as the permit's run (same values,
    seed and neighbouring relation; an older stored form of the parameters is fine)."""
    if not isinstance(earlier, Mapping) or earlier.get("seed") != permit.seed \
            or earlier.get("neighbouring") != NEIGHBOURING_RELATION:
        return False
    stored = {k: v for k, v in earlier.items() if k not in ("seed", "neighbouring")}
    read = getattr(type(permit.params), "from_dict", None)
    try:
        return read is not None and read(stored) == permit.params
    except (DpcoreError, TypeError, ValueError):
        return False


def check_account_needed(record, requester: Requester, ledger_has_accounts: bool,
                         ledger_location: str) -> None:
    """Refuse, before anything is loaded or charged, a run the ledger would refuse.

    On a private dataset of a ledger that has accounts, every run names a signed-in
    account; a session is only good on the ledger that signed it in.

    Raises
    ------
    PolicyError
    """
    if requester.session is not None and requester.session.ledger != ledger_location:
        raise PolicyError("this session was signed in on another ledger; sign in again")
    if requester.session is None and record.public_demo is not True and ledger_has_accounts:
        raise PolicyError(f"dataset {record.name!r} is private: sign in with your account "
                          "to run on it (every charge names the account that spends). "
                          "Nothing was charged")


def checked_requester(requester, ledger_location: str) -> Requester:
    """``requester`` checked again for a read on the ledger at ``ledger_location``.

    A read is judged by who asks, never by a role the caller names: a role string is a
    ``TypeError``. The requester's checks (the owner role only with an owner account's
    session this process sealed, the session's role its own) run again, so a requester
    changed after it was made reads nothing; a session of another ledger is refused.

    Raises
    ------
    TypeError
        ``requester`` is not a :class:`Requester` (e.g. ``"owner"``).
    PolicyError
        The requester no longer passes its checks, or was signed in on another ledger.
    """
    if not isinstance(requester, Requester):
        raise TypeError(f"requester must be a dpcore.privacy.policy.Requester (a signed-in "
                        f"account's, or Requester() for an anonymous analyst), not a role "
                        f"string: roles are never taken on the caller's word; got "
                        f"{requester!r}")
    requester.__post_init__()
    if requester.session is not None and requester.session.ledger != ledger_location:
        raise PolicyError("this session was signed in on another ledger; sign in again")
    return requester


def seed_allowed(record: DatasetRecord) -> bool:
    """Whether runs on ``record`` may use a fixed seed (public-demo data only)."""
    return record.public_demo is True


def allowed_modes(record: DatasetRecord, role: str) -> tuple[str, ...]:
    """Privacy modes ``role`` may launch on ``record``: faithful needs owner or public data."""
    if role == OWNER or record.public_demo is True:
        return MODES
    return (STRICT,)


def can_read(audience: str, role: str) -> bool:
    """Whether ``role`` may read a stored result with this ``audience``."""
    if role not in ROLES:
        raise PolicyError(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    return audience == EVERYONE or role == OWNER


def _check_seed(seed) -> int | None:
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) \
            or not 0 <= int(seed) < MAX_SEED:
        raise PolicyError(f"seed must be an integer in [0, 2^63); got {seed!r}")
    return int(seed)


def authorize_run(record: DatasetRecord, params, requester: Requester, *,
                  seed: int | None = None) -> RunPermit:
    """Decide, before anything is charged, whether ``requester`` may run ``params``.

    Parameters
    ----------
    record : DatasetRecord
        The registered dataset (flags and confirmed public schema from the ledger).
    params : parameters of a registered algorithm
        Any family's parameter type (``algorithm``, ``mode``, ``validate()``); the run
        path has checked its type and budget plan (:func:`dpcore.executor.check_params`).
    requester : Requester
    seed : int, optional
        Public-demo datasets only.

    Returns
    -------
    RunPermit

    Raises
    ------
    PolicyError
        A rule of this module refuses the run (the message says which and why).
    ParameterError
        Bad parameters or a budget plan that cannot be split.
    """
    if not isinstance(requester, Requester):
        raise PolicyError("requester must be a dpcore.privacy.policy.Requester")
    algorithm_spec(getattr(params, "algorithm", None))
    # The parameters' type and their budget plan belong to the family: the run path checks
    # them (dpcore.executor.check_params) before it asks here, and before any charge.
    params.validate()
    if not record.confirmed:
        raise PolicyError(f"the public schema of dataset {record.name!r} is not confirmed by "
                          "its owner yet; no run may start")
    public = record.public_demo is True
    if record.is_sandbox and not public and requester.role != OWNER:
        raise PolicyError(f"{record.name!r} is an owner sandbox on private data; only the "
                          "owner may run it")
    seed = _check_seed(seed)
    if seed is not None and not public:
        raise PolicyError(
            f"a seed is accepted only on public demo datasets; {record.name!r} is private. "
            "A known seed lets anyone replay the noise and subtract it from the release, so "
            "runs on private data always draw fresh randomness and record no seed.")
    if params.mode not in allowed_modes(record, requester.role):
        raise PolicyError(
            f"faithful mode on the private dataset {record.name!r} is for its owner only: it "
            "reproduces the paper's code, which releases values read from the raw data "
            "without paying for them (NOT ε-DP). Log in as owner, or use strict mode.")
    audience = OWNER_ONLY if not public and (params.mode == FAITHFUL or record.is_sandbox) \
        else EVERYONE
    return RunPermit(record, params, seed, audience, requester)



def content_digest(dataset) -> str:
    """SHA-256 (hex) of what a miner reads, for a dataset of any kind.

    * two-view (:class:`~dpcore.data.dataset.TwoViewDataset`): both views' coded values and
      their shapes (the format of every digest recorded before dataset kinds existed);
    * sequences (:class:`~dpcore.data.sequences.dataset.SequenceDataset`) and labelled tables
      (:class:`~dpcore.data.table.table.SynthesisTable`): the kind, then each of the data's
      ``content_arrays()`` by name, dtype, shape and bytes (record boundaries and item codes;
      clipped values, level and class codes and clip counts).

    Two loads of the same files give the same digest; any
    changed, added or removed value changes it. The digest is owner metadata (it confirms
    a guess of the whole dataset), never shown to analysts.

    Raises
    ------
    DataError
        ``dataset`` is none of the three dataset types.
    """
    if isinstance(dataset, TwoViewDataset):
        return two_view_digest(dataset)
    known = known_digest(dataset)       # read from checked partitions: hashed when written
    if known is not None:
        return known
    h = hashlib.sha256(b"dpcore-content-v1/" + kind_of_data(dataset).encode())
    for name, array in dataset.content_arrays():
        array = np.ascontiguousarray(array)
        h.update(name.encode() + b"\0" + array.dtype.str.encode() + b"\0")
        h.update(np.asarray(array.shape, dtype=np.int64).tobytes())
        h.update(array.tobytes())
    return h.hexdigest()


def require_owner(role: str, what: str) -> None:
    """Raise PolicyError unless ``role`` is the owner (``what`` names the refused action)."""
    if role != OWNER:
        raise PolicyError(f"{what} is for the data owner only (it shows true statistics)")


def may_see_diagnostics(role: str, record: DatasetRecord) -> bool:
    """Owner diagnostics (score traces, timings: computed from true data) — owner or public."""
    return can_see_true_statistics(role, record.public_demo)
