"""First-start bootstrapping: register the built-in sample datasets in the ledger.

Each folder of ``sample_data/`` holding a schema file of any dataset kind —
``schema.json``/``schema.toml`` (two-view tables: clinic, cms_small, diabetes, and sites,
whose schema declares a public location grid for Explore's noisy map),
``sequence_schema.json`` (sequences: clickstream, house_power) or
``synthesis_schema.json`` (labelled tables: pima_like), see :mod:`dpcore.data.kinds` — is
registered under its schema name with :data:`DEFAULT_SAMPLE_CAP` total ε, its kind, its
schema marked confirmed (the sample schemas are hand-written, vetted public
declarations: domains, alphabets and bounds chosen from general knowledge, not from the
data) and the content digest of its data (runs on other data are refused).

Idempotent and race-safe: any number of sessions and processes may call it at
once. A dataset already registered is left alone (its cap, spends and schema are
never touched), and losing a registration race ("already exists") is not an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dpcore.data.kinds import list_sample_folders, load_any_schema, load_registered_data
from dpcore.errors import DataError, ParameterError
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import content_digest

__all__ = ["DEFAULT_SAMPLE_CAP", "BOOTSTRAP_ACTOR", "STALE_RUN_SECONDS", "BootstrapReport",
           "register_sample_datasets", "close_stale_runs", "first_start_accounts",
           "samples_wanted", "SAMPLES_ENV_VAR"]

#: ``DPRM_SAMPLE_DATA=off``: a server of private data registers no built-in samples (and so
#: shows a visitor who did not sign in nothing but the sign-in).
SAMPLES_ENV_VAR = "DPRM_SAMPLE_DATA"


def samples_wanted() -> bool:
    """Whether the app registers the built-in samples (unless ``DPRM_SAMPLE_DATA=off``)."""
    import os

    return os.environ.get(SAMPLES_ENV_VAR, "on").strip().lower() not in ("off", "0", "no")

#: Total ε each sample dataset may spend when the app registers it (owners can change it).
DEFAULT_SAMPLE_CAP = 20.0
#: Actor recorded in the ledger for the automatic registration.
BOOTSTRAP_ACTOR = "app-bootstrap"
#: A run still "charged" after this long was left by a killed or crashed process: far
#: longer than any real run (the paper-size benchmark takes under a minute).
STALE_RUN_SECONDS = 24 * 3600


@dataclass
class BootstrapReport:
    """What one bootstrap call did.

    Attributes
    ----------
    registered : list of str
        Datasets registered by this call.
    present : list of str
        Sample datasets that were already in the ledger (or registered by a racing caller).
    problems : list of str
        Sample folders that could not be registered, with the reason (shown to owners).
    """

    registered: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def register_sample_datasets(ledger: Ledger, cap_epsilon: float = DEFAULT_SAMPLE_CAP
                             ) -> BootstrapReport:
    """Register every sample dataset that is not in the ledger yet.

    Parameters
    ----------
    ledger : Ledger
        The ledger to register in (normally ``Ledger()``, i.e. ``$DPRM_LEDGER``).
    cap_epsilon : float
        Total ε of each newly registered sample dataset.

    Returns
    -------
    BootstrapReport
        Registered / already present names and per-folder problems. A broken sample
        folder is reported, not raised, so the app still starts.
    """
    report = BootstrapReport()
    existing = {d.name for d in ledger.list_datasets()}
    for kind, folder in list_sample_folders():
        try:
            _, schema = load_any_schema(folder)
        except DataError as exc:
            report.problems.append(f"{folder.name}: {exc}")
            continue
        if schema.name in existing:
            report.present.append(schema.name)
            continue
        try:
            digest = content_digest(load_registered_data(kind, folder, schema))
            ledger.register_dataset(schema.name, schema, str(folder), cap_epsilon,
                                    actor=BOOTSTRAP_ACTOR, confirmed=True,
                                    content_digest=digest)
        except ParameterError as exc:
            # Another session or process may have registered it between our read and
            # our write ("already exists"): fine if the dataset is there now.
            try:
                ledger.get_dataset(schema.name)
            except ParameterError:
                report.problems.append(f"{folder.name}: {exc}")
                continue
            report.present.append(schema.name)
            continue
        except DataError as exc:
            report.problems.append(f"{folder.name}: {exc}")
            continue
        report.registered.append(schema.name)
    return report


def close_stale_runs(ledger: Ledger, older_than_seconds: float = STALE_RUN_SECONDS) -> list[str]:
    """Mark runs a killed process left ``charged`` as failed (their charge stays spent).

    Without this they would show as running forever on the Runs page.
    """
    return ledger.fail_stale_runs(older_than_seconds)


_accounts_checked: set[str] = set()


def first_start_accounts(location: str) -> tuple[str, str] | None:
    """Once per server process and ledger: on a ledger without any account, create the local
    demo analyst and print its name and password in the server's terminal.

    The built-in private samples need a signed-in account; this is the way into them on a
    first start with no set-up. The password is printed once (to whoever started the server,
    who owns the ledger anyway) and only its hash is stored. Returns what it printed, or None.
    """
    from dpcore.privacy.accounts import ensure_demo_analyst

    if location in _accounts_checked:
        return None
    _accounts_checked.add(location)
    made = ensure_demo_analyst(Ledger(location))
    if made is not None:
        print(f"\n  Private sample data: sign in as {made[0]!r} with password {made[1]!r}\n"
              "  (a local demo analyst, created because the ledger had no account; the owner "
              "manages accounts with `python -m dpcore users`)\n", flush=True)
    return made
