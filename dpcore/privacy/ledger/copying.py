"""Copy a whole ledger into a new, empty one on any backend (e.g. a SQLite file → PostgreSQL).

``python -m dpcore ledger copy --from sqlite:PATH --to postgresql://…`` moves a workbench
from one machine's file to a database several app servers share. Everything is copied as
it is — datasets (schemas, sources, flags, digests, kinds), the cap history, every charge
with its id and parts, runs with their status and audience, refunds, stored results (releases and
owner diagnostics; the large tables a release keeps in the source's results store,
:mod:`~dpcore.privacy.ledger.result_store`, are checked against their digests and written to
the target's store before the target's rows commit), the accounts (with their password
hashes and identities) and the analysts' quotas, the sign-in log and the workspaces (with
their revisions and shares) — so budgets, audit trails, results and workspaces read the same
afterwards; nothing is re-charged or refunded.

The copy is one transaction on the target: it either holds everything or nothing. A
target that holds anything is refused (a copy never merges two ledgers' budgets). The
source is read in one consistent snapshot; stop the app servers while copying, or charges
made meanwhile stay behind in the source only. The append-only triggers stay on during the
copy: a finished run is inserted as ``charged``, given its result, then moved once to its
final status, exactly as the ledger itself does.

Who may run it: whoever can read the source file and write the target database already
holds every ledger row (owner-only ones too), so no owner password is asked.
"""

from __future__ import annotations

import json

from dpcore.errors import ParameterError
from dpcore.privacy.ledger.result_store import MARKER, references
from dpcore.privacy.ledger.store import Ledger

__all__ = ["TABLES", "copy_ledger", "copy_command"]

#: Tables in insertion order, with their columns (schema version 8) and read order.
TABLES: dict[str, tuple[tuple[str, ...], str]] = {
    "datasets": (("name", "schema_json", "source_path", "public_demo", "confirmed",
                  "sandbox_of", "created_by", "created_at", "content_digest", "kind", "row_bound"),
                 "name"),
    "accounts": (("name", "role", "password_hash", "external_identity", "created_by",
                  "created_at", "disabled_at"), "name"),
    "budgets": (("id", "dataset", "cap_nano", "actor", "created_at"), "id"),
    "quotas": (("id", "dataset", "account", "quota_nano", "actor", "created_at"), "id"),
    "charges": (("id", "run_id", "dataset", "algorithm", "epsilon_nano", "parts_json",
                 "params_json", "actor", "created_at", "account", "params_digest"), "id"),
    "runs": (("run_id", "dataset", "algorithm", "status", "params_json", "error",
              "created_at", "finished_at", "audience"), "run_id"),
    "results": (("run_id", "result_json", "diagnostics_json", "created_at"), "run_id"),
    "refunds": (("id", "run_id", "dataset", "epsilon_nano", "account", "reason",
                 "created_at"), "id"),
    "auth_events": (("id", "created_at", "actor", "entry", "outcome", "detail", "account",
                     "client"), "id"),
    "workspaces": (("dataset", "account", "role", "name", "workspace_json", "created_at",
                    "updated_at", "revision"), "dataset, account, name"),
    "workspace_shares": (("dataset", "account", "name", "colleague", "created_at"),
                         "dataset, account, name, colleague"),
}


def _parents_first(datasets: list[dict]) -> list[dict]:
    """Datasets ordered so that every sandbox comes after the dataset it copies."""
    done: set[str] = set()
    ordered: list[dict] = []
    pending = list(datasets)
    while pending:
        ready = [d for d in pending if d["sandbox_of"] is None or d["sandbox_of"] in done]
        if not ready:
            names = ", ".join(sorted(d["name"] for d in pending))
            raise ParameterError(f"the source ledger's sandboxes {names} copy datasets it "
                                 "does not hold; nothing was copied")
        ordered.extend(ready)
        done.update(d["name"] for d in ready)
        pending = [d for d in pending if d["name"] not in done]
    return ordered


def _insert(con, table: str, row: dict) -> None:
    columns = TABLES[table][0]
    con.execute(f"INSERT INTO {table} ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' for _ in columns)})",
                tuple(row[c] for c in columns))


def copy_ledger(source: Ledger, target: Ledger) -> dict[str, int]:
    """Copy every row of ``source`` into the empty ledger ``target``; rows copied per table.

    Parameters
    ----------
    source, target : Ledger
        Any backends; both are created or migrated to the current schema version first.

    Returns
    -------
    dict
        Table name → number of rows copied (``datasets``, ``accounts``, ``budgets`` (caps),
        ``quotas``, ``charges``, ``runs``, ``results``, ``refunds``, ``auth_events`` (sign-ins),
        ``workspaces``, ``workspace_shares``), and ``result_tables``: the files of the
        results store the copied results refer to.

    Raises
    ------
    ParameterError
        ``target`` is ``source``, or holds any row already; nothing is written. A
        :class:`~dpcore.privacy.ledger.result_store.ResultStoreMissing` when a result refers
        to stored tables and either ledger has no results store.
    DataError
        A stored table is missing from the source's store or does not match its digest;
        no row is written (files already copied stay in the target's store, unreferenced).
    """
    if source.location == target.location:
        raise ParameterError(f"source and target are the same ledger ({source.location}); "
                             "nothing was copied")
    with source._read() as con:
        rows = {table: [dict(zip(columns, r)) for r in con.execute(
                    f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}")]
                for table, (columns, order) in TABLES.items()}
    with target._write() as con:
        held = {table: int(con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
                for table in TABLES}
        if any(held.values()):
            listed = ", ".join(f"{n} {t}" for t, n in held.items() if n)
            raise ParameterError(f"the target ledger {target.location} is not empty ({listed});"
                                 " a copy only goes into a new, empty ledger; nothing was "
                                 "copied")
        # The files first: the target's rows commit only once every table they refer to
        # is in the target's store (as store_result writes them).
        tables = _copy_result_tables(source, target, rows["results"])
        for row in _parents_first(rows["datasets"]):
            _insert(con, "datasets", row)
        for table in ("accounts", "budgets", "quotas", "charges"):
            for row in rows[table]:
                _insert(con, table, row)
        for row in rows["runs"]:         # as the ledger writes them: charged first
            _insert(con, "runs", {**row, "status": "charged", "error": None,
                                  "finished_at": None})
        for row in rows["results"]:
            _insert(con, "results", row)
        for row in rows["refunds"]:      # while the runs are still charged, as written
            _insert(con, "refunds", row)
        for row in rows["runs"]:
            if row["status"] != "charged":
                con.execute("UPDATE runs SET status = ?, error = ?, finished_at = ? "
                            "WHERE run_id = ?",
                            (row["status"], row["error"], row["finished_at"], row["run_id"]))
        for row in rows["auth_events"]:
            _insert(con, "auth_events", row)
        for table in ("workspaces", "workspace_shares"):
            for row in rows[table]:
                _insert(con, table, row)
        target._backend.reset_identities(con)
    return {**{table: len(found) for table, found in rows.items()}, "result_tables": tables}


def _copy_result_tables(source: Ledger, target: Ledger, results: list[dict]) -> int:
    """Copy every stored table the ``results`` rows refer to, each checked against its
    digest; the number of distinct tables."""
    digests: dict[str, str] = {}
    for row in results:
        if MARKER in row["result_json"]:
            for digest in references(json.loads(row["result_json"])):
                digests.setdefault(digest, row["run_id"])
    if not digests:
        return 0
    source_store, target_store = source.results_store, target.results_store
    for digest, run_id in digests.items():
        data = source_store.get_bytes(digest, what=f"the result of run {run_id!r}")
        target_store.put_bytes(data)
    return len(digests)


def copy_command(source: str, target: str, *, source_results: str | None = None,
                 target_results: str | None = None) -> int:
    """``ledger copy --from SOURCE --to TARGET``: copy and print what was copied (exit 0).

    ``source_results`` / ``target_results``: the results store of a PostgreSQL source or
    target (default ``$DPRM_RESULTS_DIR``).
    """
    copied = copy_ledger(_opened(source, source_results), _opened(target, target_results))
    from_, to = Ledger.open(source).location, Ledger.open(target).location
    print(f"copied {copied['datasets']} datasets, {copied['accounts']} accounts, "
          f"{copied['budgets']} caps, {copied['quotas']} quotas, "
          f"{copied['charges']} charges, {copied['refunds']} refunds, {copied['runs']} runs, "
          f"{copied['results']} results, "
          f"{copied['auth_events']} sign-in events, {copied['workspaces']} workspaces and "
          f"{copied['workspace_shares']} workspace shares "
          f"(with {copied['result_tables']} stored result tables) "
          f"from {from_} to {to}")
    return 0


def _opened(location: str, results_dir: str | None) -> Ledger:
    ledger = Ledger.open(location)
    if results_dir is None or ledger.path is not None:
        if results_dir is not None:
            raise ParameterError(f"{ledger.location} is a SQLite ledger: its results store is "
                                 f"{ledger.path}.results beside it; --from-results and "
                                 "--to-results are for PostgreSQL ledgers")
        return ledger
    return Ledger.open(location, results_dir=results_dir)
