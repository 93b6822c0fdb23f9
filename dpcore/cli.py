"""Command line: ``python -m dpcore {register,budget,mine,synthesize,query,batch,result,runs,
experiment,users,workspaces,owner-hash,ledger} ...``.

``register`` takes a dataset folder of any kind: a two-view table (``schema.json`` /
``schema.toml``), a sequence dataset (``sequence_schema.json``) or a labelled table
(``synthesis_schema.json``).

``mine --algorithm`` takes any registered algorithm (:data:`dpcore.registry.ALGORITHM_SPECS`):
the redescription miners (the tree miners and Serenade, with ``--in-tr``, ``--omega``, ...,
``--init-pairs``, ``--steepness``, ...) on a two-view dataset; PFS2 and its
straightforward baseline (``--theta``, ``--zeta``, ``--eta``, ``--l1`` and the budget
shares) on a sequence dataset; MC-GEN and the floor (``--k``, ``--feature-groups``,
``--cells``, ...) on a labelled table — ``synthesize`` is ``mine`` with MC-GEN as the
default. Every parameter flag is generated from the registry: a parameter type that declares
its fields (:class:`dpcore.family.ParamField`, the redescription miners'
:data:`dpcore.redescriptions.params.FIELDS`) gives one flag per field with its type,
choices, range, unit and default; the other families' flags come from each algorithm's
registered parameters, defaults and help. A flag that is not a parameter of the chosen
algorithm's type is refused by name; a redescription field the chosen redescription miner
does not read is validated but has no effect (the miners share one parameter type).

``--out`` is a file whose extension says the format: ``.json`` (or ``-``, stdout) the
result JSON; ``.csv`` the frequent sequences (pattern, length, noisy support) or the
synthetic table; ``.parquet`` the synthetic table with the result in its metadata. A format
the result cannot have is refused before anything is charged.

``mine --dry-run`` checks the run as ``mine`` does, prints its cost and the accuracy to
expect (sequences: from ``--expected-records N``, a count the analyst states, with
:mod:`dpcore.sequences.accuracy`; synthesis: :mod:`dpcore.synthesis.accuracy`) and stops:
nothing is charged, no data are read.

Every ``mine`` goes through the same privacy policy as the app
(:mod:`dpcore.privacy.policy`): it mines the dataset's registered data, refuses a seed
on private data and faithful mode on private data unless ``--owner`` (an owner
account signs in), and is charged to the ledger (``--ledger`` or ``$DPRM_LEDGER``)
before any noise is drawn, in the name of the signed-in account (``--user NAME`` or
``$DPRM_USER``; the password from ``$DPRM_PASSWORD`` or the terminal, checked against
the hash the ledger keeps — never against anything in the caller's environment). The run
id is printed before mining; the result is stored in the ledger before it is written to
``--out`` and can be fetched again with ``result RUN_ID``. ``runs DATASET`` lists a
dataset's runs, who spent them and their state. ``register`` and ``experiment`` (NOT
private: it reports true statistics) need an owner account.

``users add|disable|list|quota`` manages the accounts and the analysts' shares of a
dataset's cap (:mod:`dpcore.privacy.accounts`). ``workspaces list|share|unshare DATASET``
does, as the signed-in account, what Explore's "Share this workspace with a colleague" does:
list your Explore workspaces and those colleagues shared with you, share one of yours with a
named colleague, or take the share back (0 ε: a workspace holds references to released
results and what its account typed).

``query --dataset D --left TEXT --right TEXT`` pays for a query pair of the analyst's own
(:mod:`dpcore.redescriptions.custom_query`): it prints the pair in canonical form and its
cost, asks for a yes on the terminal (``--yes`` skips the question; with neither a terminal
nor ``--yes`` it is refused), then charges and stores it like ``mine`` and writes the noisy
4-cell table and its statistics as JSON. ``--map`` releases instead the noisy E11/E10/E01
counts per cell of the schema's location grid (:mod:`dpcore.redescriptions.regions`). Text
naming what the public schema does not declare is refused with the reason, nothing charged.

A command imports only what it needs: pandas, SciPy, numba and the miners are imported when
data are read or mined, so ``--help``, ``budget`` and ``runs`` start in a fraction of a
second.

``batch PLAN`` runs a plan file of many runs (:mod:`dpcore.distributed.plan`) on a Dask
cluster (``--scheduler tcp://host:8786``, else ``$DPRM_SCHEDULER``, else a LocalCluster of
``--workers`` processes): the whole plan is checked first (a bad plan charges nothing), each
run is charged before it is dispatched, and each result is stored before it is written
(``--out-dir``). ``experiment --scheduler`` runs the harness's trials on such a cluster.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from dpcore.data.kinds import load_any_dataset
from dpcore.errors import (
    DataError,
    DpcoreError,
    OwnerLoginThrottled,
    ParameterError,
    SignInError,
)
from dpcore.family import ParamField
from dpcore.family import algorithm as implementation
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import OWNER_ONLY, Requester, authorize_run, can_read
from dpcore.privacy.registration import register_folder
from dpcore.privacy.roles import ANALYST, OWNER, can_see_true_statistics, hash_command
from dpcore.privacy.units import nano_to_epsilon
from dpcore.redescriptions.params import TreeParams
from dpcore.registry import (
    ALGORITHM_SPECS,
    ALGORITHMS,
    FAITHFUL,
    MCGEN,
    REDESCRIPTION_QUERIES,
    REDESCRIPTIONS,
    SEQUENCES,
    STRICT,
    SYNTHESIS,
    TREE_ALGORITHMS,
    algorithm_spec,
    dataset_kind_spec,
    family_algorithms,
    presets,
)
from dpcore.runs import (
    RunInProgressError,
    charge_and_mine,
    check_dataset_kind,
    check_registered_data,
    load_result,
    new_run_id,
    run_cost,
)

if TYPE_CHECKING:
    from tqdm import tqdm

#: ``--algorithm``'s default and the ``--epsilon`` and ``--mode`` flags of every family: the
#: tree miners' declarations (as they always were; ε and mode are declared alike by
#: Serenade's type).
_MINE_FIELDS = TreeParams.FIELDS


def _password(args, name: str) -> str:
    """The account's password: ``$DPRM_PASSWORD`` (a script's secret), else asked on the
    terminal. It is checked against the hash the ledger keeps, never against anything in
    the caller's environment (docs/PRIVACY.md, "One trust boundary")."""
    password = os.environ.get("DPRM_PASSWORD")
    if password is None:
        password = os.environ.get("DPRM_OWNER_PASSWORD")     # the name before accounts
    if password is None and sys.stdin.isatty():
        password = getpass.getpass(f"password of {name}: ")
    return password or ""


def _user_name(args, ledger: Ledger, need_owner: bool) -> str:
    """``--user`` / ``$DPRM_USER``; for an owner-only command on a ledger with exactly one
    active owner account, that account."""
    name = getattr(args, "user", None) or os.environ.get("DPRM_USER")
    if name:
        return name
    if need_owner:
        owners = [a.name for a in ledger.list_accounts() if a.role == OWNER and a.active]
        if len(owners) == 1:
            return owners[0]
        if not owners:
            raise SystemExit("error: this command needs the data owner, and the ledger has no "
                             "owner account yet. Whoever runs the ledger's service account "
                             "creates one: python -m dpcore users add NAME --role owner")
    raise SystemExit("error: name your account with --user NAME (or $DPRM_USER)")


def _sign_in_or_exit(args, *, need_owner: bool = False):
    """Sign an account in (under the ledger's back-off, every attempt logged) or exit."""
    from dpcore.privacy.accounts import cli_client, sign_in

    ledger = Ledger(args.ledger)
    name = _user_name(args, ledger, need_owner)
    try:
        session = sign_in(ledger, name, _password(args, name), client=cli_client(),
                          entry="cli")
    except (OwnerLoginThrottled, SignInError) as exc:
        raise SystemExit(f"error: {exc}") from None
    if need_owner and session.role != OWNER:
        raise SystemExit(f"error: this command is for the data owner; {name!r} is an "
                         f"{session.role}")
    return session


def _owner_or_exit(args):
    """Sign in an owner account or exit (``register``, ``experiment``, ``--owner``)."""
    return _sign_in_or_exit(args, need_owner=True)


def _parse_groups(text: str) -> list[list[str]]:
    """``a,b;c`` → ``[["a", "b"], ["c"]]`` (feature groups on the command line)."""
    groups = [[x.strip() for x in part.split(",") if x.strip()] for part in text.split(";")]
    if not text.strip() or any(not g for g in groups):
        raise argparse.ArgumentTypeError(f"--feature-groups: expected groups of feature names "
                                         f"like 'a,b;c'; got {text!r}")
    return groups


#: Flag types of parameters whose default is None (the rest take their default's type).
_NONE_DEFAULT_TYPES = {"l1": int, "feature_groups": _parse_groups}


class _Flag(NamedTuple):
    """One parameter flag of ``mine``: its argparse type and choices, help, and the
    algorithms whose parameters it sets."""

    kind: Callable
    help: str
    users: tuple[str, ...]
    choices: tuple[str, ...] | None = None


def _declared_flag(declared: ParamField) -> _Flag:
    """A flag from a parameter type's declaration (:class:`dpcore.family.ParamField`): its
    type, choices, range, unit and default in the help; the range itself is checked by the
    type's ``validate()``, so a bad value is refused by name before anything is charged."""
    unit = f", {declared.unit}" if declared.unit else ""
    accepted = "" if declared.choices else f"range {declared.bounds_text()}{unit}; "
    return _Flag(declared.kind, f"{declared.help} ({accepted}default {declared.default})", (),
                 declared.choices or None)


def _family_flags() -> dict[str, _Flag]:
    """Every parameter flag of ``mine`` from the registry: name → :class:`_Flag`. A parameter
    type that declares its fields (``FIELDS``) gives a flag per field, used by every
    algorithm of that type; otherwise each algorithm's registered parameters give one, with
    its registered default and help. ε and mode are every family's (:func:`_add_mine_arguments`)."""
    flags: dict[str, _Flag] = {}
    for spec in ALGORITHM_SPECS.values():
        if spec.key in REDESCRIPTION_QUERIES:
            continue                    # paid queries: `query`, not `mine`
        params_type = implementation(spec.key).params_type
        declared = getattr(params_type, "FIELDS", None)
        if declared is not None:
            names = [n for n in declared if n not in _SHARED_FLAGS + _NOT_FLAGS]
        else:
            names = list(dict.fromkeys(n for mode in spec.modes
                                       for n in spec.parameters_used(mode)[2:]))
        defaults = None if declared is not None else spec.defaults()
        for name in names:
            flag = flags.get(name)
            if flag is None:
                if declared is not None:
                    flag = _declared_flag(declared[name])
                else:
                    default = defaults[name]
                    kind = _NONE_DEFAULT_TYPES[name] if default is None else type(default)
                    flag = _Flag(kind, f"{spec.help(name)} (default {default})", ())
            flags[name] = flag._replace(users=flag.users + (spec.key,))
    return flags


#: Fields every parameter type has: ``--algorithm``, ``--epsilon`` and ``--mode`` are
#: ``mine``'s own flags, not a family's.
_SHARED_FLAGS = ("algorithm", "epsilon", "mode")
#: Declared fields with no flag: the noise kind follows the mode (strict: discrete Laplace;
#: faithful: the paper's float Laplace), so no command line can ask for float noise.
_NOT_FLAGS = ("noise",)


def __getattr__(name: str):
    # FAMILY_FLAGS is read from the registry at use, so a family registered at run time
    # (dpcore.registry.register_family) gets its flags.
    if name == "FAMILY_FLAGS":
        return _family_flags()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _params(args):
    """The validated parameters of ``mine``'s flags (raises ParameterError naming a bad one):
    the algorithm's registered defaults, then every flag given; a flag of another
    algorithm's parameters is refused by name. ``--stable K`` (tree miners) is InTr = K,
    RMIter = 1."""
    spec = algorithm_spec(args.algorithm)
    flags = _family_flags()
    given = {name: getattr(args, name) for name in flags if hasattr(args, name)}
    foreign = [n for n in given if spec.key not in flags[n].users]
    stable = getattr(args, "stable", None)
    if stable is not None:
        if "in_tr" not in flags or spec.key not in flags["in_tr"].users:
            foreign.append("stable")
        given.update(in_tr=stable, rm_iter=1)
    if foreign:
        own = [n for n, f in flags.items() if spec.key in f.users]
        raise ParameterError(f"{', '.join(_flag(n) for n in foreign)}: not a parameter of "
                             f"{spec.label}; its parameters: "
                             f"{', '.join(_flag(n) for n in own)}. Nothing was charged")
    values = {**spec.defaults(), **given, "algorithm": spec.key, "epsilon": args.epsilon,
              "mode": args.mode}
    return implementation(spec.key).params_type(**values).validate()


@contextmanager
def _progress_bar(desc: str, total: float | None, unit: str, *, counts: bool = False
                  ) -> Iterator[tqdm]:
    """A progress bar on stderr (tqdm), closed however the block ends: its line always
    ends with a newline, so what is printed next starts on a line of its own. It appears
    only after 0.5 s, so a request refused at once prints no bar."""
    from tqdm import tqdm  # lazy: only commands that show progress pay for it

    bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=True, delay=0.5,
               dynamic_ncols=True, mininterval=0.2,
               bar_format="{desc}: {percentage:3.0f}%|{bar}| "
                          + ("{n_fmt}/{total_fmt} " if counts else "")
                          + "[{elapsed}<{remaining}{postfix}]")
    try:
        yield bar
    finally:
        bar.close()


def _fraction_progress(bar: tqdm):
    """A miner's ``progress(fraction, message)`` that moves ``bar`` (total 100)."""
    def progress(fraction: float, message: str) -> None:
        bar.update(min(100.0, max(0.0, 100.0 * float(fraction))) - bar.n)
        bar.set_postfix_str(str(message)[:60])
    return progress


def _count_progress(bar: tqdm):
    """The harness's ``progress(done, total, message)`` that moves ``bar``."""
    def progress(done: int, total: int, message: str) -> None:
        bar.total = total
        bar.update(done - bar.n)
        bar.set_postfix_str(str(message)[:60])
    return progress


def cmd_register(args) -> int:
    _owner_or_exit(args)
    # The schema file is the owner's written declaration of what is public; registering
    # it from the command line confirms it (the same path as the Data page's upload).
    ledger = Ledger(args.ledger)
    kind, record = register_folder(ledger, args.data, cap=args.cap, name=args.name or None)
    if args.max_rows is not None:
        _declare_row_bound(ledger, record, args.max_rows)
    print(f"registered {record.name!r} ({dataset_kind_spec(kind).label}) with a budget of "
          f"ε = {args.cap}; its schema file is now its confirmed public declaration",
          file=sys.stderr)
    return 0


def _declare_row_bound(ledger: Ledger, record, rows: int) -> None:
    """The owner's public row bound, checked against the registered data (the owner sees
    them; nobody else reads this check)."""
    from dpcore.distributed.preflight import true_size
    from dpcore.runs import load_registered

    if rows <= 0:
        raise ParameterError(f"--max-rows must be a positive whole number; got {rows}")
    size = true_size(load_registered(record))
    if size > rows:
        raise ParameterError(f"dataset {record.name!r} holds {size:,} rows (items for "
                             f"sequences), more than --max-rows {rows:,}; it is registered "
                             "without a row bound")
    ledger.declare_row_bound(record.name, rows, actor="owner")


def cmd_budget(args) -> int:
    status = Ledger(args.ledger).budget(args.name)
    print(f"{args.name}: cap ε = {status.cap:g}, spent ε = {status.spent:g}, "
          f"remaining ε = {status.remaining:g}")
    return 0


def _requester(args) -> Requester:
    """An anonymous analyst by default (public demo data, or a ledger without accounts);
    ``--user`` / ``$DPRM_USER`` signs that account in, ``--owner`` an owner account."""
    if getattr(args, "owner", False):
        return Requester.signed_in(_owner_or_exit(args), actor=args.actor)
    if getattr(args, "user", None) or os.environ.get("DPRM_USER"):
        return Requester.signed_in(_sign_in_or_exit(args), actor=args.actor)
    return Requester(role=ANALYST, actor=args.actor)


#: What ``--out`` may be, by family: file extension → format.
_OUT_FORMATS = {REDESCRIPTIONS: {".json": "json"},
                SEQUENCES: {".json": "json", ".csv": "csv"},
                SYNTHESIS: {".json": "json", ".csv": "csv", ".parquet": "parquet"}}


def _special_file(out: str) -> bool:
    """Whether ``out`` is an existing file that is not a regular file: a device
    (``/dev/null``), a FIFO, ``/dev/stdout``. Such a file is written in place, never
    replaced: renaming a temporary file over ``/dev/null`` (as root) would turn the device
    into a regular file for the whole machine."""
    try:
        return out != "-" and not stat.S_ISREG(os.stat(out).st_mode) \
            and not stat.S_ISDIR(os.stat(out).st_mode)
    except OSError:
        return False


def _out_format(out: str, family: str) -> str:
    """The export format of ``--out`` for a result of ``family`` (ParameterError if its name
    promises another format). Redescription results are JSON; a name without an extension
    and a device, FIFO or ``/dev/stdout`` get JSON too."""
    if out == "-":
        return "json"
    suffix = Path(out).suffix.lower()
    if _special_file(out) and suffix not in _OUT_FORMATS.get(family, {".json": "json"}):
        return "json"
    if family == REDESCRIPTIONS and not suffix:
        return "json"
    formats = _OUT_FORMATS.get(family, {".json": "json"})
    if suffix not in formats:
        raise ParameterError(f"--out {out!r}: a {family} result is written as "
                             f"{', '.join(formats)}; name the file with one of these "
                             "extensions. Nothing was charged")
    return formats[suffix]


def _check_out(out: str) -> Path | None:
    """Refuse an output path that cannot be written, before anything is charged."""
    if out == "-":
        return None
    path = Path(out)
    if path.is_dir():
        raise ParameterError(f"--out {out!r} is a folder; give a file name")
    parent = path.resolve().parent
    if not parent.is_dir():
        raise ParameterError(f"--out {out!r}: the folder {str(parent)!r} does not exist")
    if _special_file(out):
        if not os.access(path, os.W_OK):
            raise ParameterError(f"--out {out!r} is not writable")
        return path
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ParameterError(f"--out {out!r} is not writable")
    return path


def _write_out(path: Path | None, text: str) -> None:
    """Write ``text`` to ``path`` atomically (stdout for None)."""
    if path is None:
        print(text)
        return
    _write_atomically(path, lambda tmp: Path(tmp).write_text(text + "\n", encoding="utf-8"))


def _write_atomically(path: Path, write) -> None:
    """``write(tmp)`` into a temporary file beside ``path``, then rename it to ``path``; a
    device, FIFO or ``/dev/stdout`` is written in place (:func:`_special_file`)."""
    if _special_file(str(path)):
        write(str(path))
        return
    fd, tmp = tempfile.mkstemp(dir=path.resolve().parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _patterns_frame(result):
    """The frequent sequences of a PFS2 result as a table (DP release: noisy supports)."""
    import pandas as pd

    return pd.DataFrame({"pattern": [p.text() for p in result.patterns],
                         "length": [p.length for p in result.patterns],
                         "noisy_support": [p.noisy_support for p in result.patterns],
                         "support_low_90": [p.support_low for p in result.patterns],
                         "support_high_90": [p.support_high for p in result.patterns],
                         "flags": ["; ".join(p.flags) for p in result.patterns]},
                        columns=["pattern", "length", "noisy_support", "support_low_90",
                                 "support_high_90", "flags"])


def _export(result, family: str, path: Path | None, fmt: str) -> None:
    """Write a result (never its owner diagnostics) in ``fmt`` to ``path`` (stdout: JSON)."""
    if fmt == "json":
        text = result.to_json()
        if family == REDESCRIPTIONS:
            # every released statistic with its 90 % interval (released values only, 0 ε)
            from dpcore.redescriptions.intervals import intervals_document

            text = json.dumps({**json.loads(text), "intervals": intervals_document(result)},
                              ensure_ascii=False)
        _write_out(path, text)
    elif fmt == "csv":
        frame = _patterns_frame(result) if family == SEQUENCES else result.synthetic
        _write_atomically(path, lambda tmp: frame.to_csv(tmp, index=False))
    else:
        _write_atomically(path, lambda tmp: result.write_parquet(tmp))


def _summary(result, family: str) -> str:
    if family == SEQUENCES:
        return f"{len(result.patterns)} frequent sequences"
    if family == SYNTHESIS:
        return f"a synthetic table of {len(result.synthetic)} rows"
    if family == REDESCRIPTIONS:
        return f"{len(result.redescriptions)} redescriptions"
    return f"a {family} result"


@contextmanager
def _analyst_safe_data_errors(record, requester: Requester) -> Iterator[None]:
    """A DataError while loading or checking private data reaches an analyst without its
    text: a loader message can quote a raw value and its row."""
    try:
        yield
    except DataError:
        if can_see_true_statistics(requester.role, record.public_demo):
            raise
        raise DpcoreError(f"the registered data of {record.name!r} could not be loaded or "
                          "checked; ask the data owner. Nothing was charged.") from None


def _dry_run_text(record, params, cost: int, expected_records: int | None) -> str:
    """``mine --dry-run``: the run's cost and its accuracy statement from the parameters and
    public facts alone (0 ε: nothing is charged, no data are read)."""
    family = algorithm_spec(params.algorithm).family
    lines = [f"dry run: {ALGORITHM_SPECS[params.algorithm].label} on {record.name!r} would "
             f"cost ε = {nano_to_epsilon(cost):g}; nothing was charged."]
    if family == SEQUENCES:
        from dpcore.sequences.accuracy import accuracy_lines, expected_accuracy

        if expected_records is None:
            lines.append("Accuracy to expect: give --expected-records N (a count you state, "
                         "never read from the data) to see it.")
        else:
            schema = record.schema
            l1 = int(params.l1 if params.l1 is not None else schema.l1)
            lines += accuracy_lines(expected_accuracy(params, schema.n_items, l1,
                                                      expected_records))
    elif family == SYNTHESIS:
        from dpcore.synthesis.accuracy import accuracy_text

        lines.append(accuracy_text(params, record.schema).replace("**", ""))
    else:
        from dpcore.redescriptions.intervals import interval_expectation_text
        from dpcore.redescriptions.serenade.selection import serenade_selection

        lines.append(interval_expectation_text(params).replace("**", ""))
        selection = (serenade_selection(record.schema, params) if params.is_serenade
                     else None)
        if selection is not None and selection.near_random:
            lines.append(selection.warning(params.epsilon, ALGORITHM_SPECS[
                params.algorithm].label).replace("**", ""))
    return "\n".join(lines)


def cmd_mine(args) -> int:
    if args.expected_records is not None and not args.dry_run:
        raise ParameterError("--expected-records is read only with --dry-run (the accuracy "
                             "statement); nothing was charged")
    params = _params(args)
    family = algorithm_spec(params.algorithm).family
    fmt = _out_format(args.out, family)
    out = _check_out(args.out)
    requester = _requester(args)
    ledger = Ledger(args.ledger)
    data = load_any_dataset(args.data)[1] if args.data else None
    name = args.dataset or (data.schema.name if data is not None else None)
    if name is None:
        raise ParameterError("give --dataset (a registered dataset name)")
    record = ledger._dataset_record(name)
    check_dataset_kind(record, params.algorithm)
    authorize_run(record, params, requester, seed=args.seed)
    if data is not None:
        # --data only names which files the caller believes were registered (owner or public
        # demo data): a mismatch is refused, and the registered copy is what gets mined.
        check_registered_data(ledger, record, data, requester)
        data = None
    if family == SYNTHESIS:                     # the public schema: before the cost line
        from dpcore.synthesis.miner import check_feature_groups

        check_feature_groups(record.schema, params)
    cost = run_cost(params)
    if args.dry_run:
        print(_dry_run_text(record, params, cost, args.expected_records))
        return 0
    run_id = new_run_id()
    print(f"run {run_id}: costs ε = {nano_to_epsilon(cost):g} of {name!r} "
          f"(remaining before: ε = {ledger.budget(name).remaining:g}), charged once its last "
          f"checks pass; fetch it again with `python -m dpcore result {run_id}`",
          file=sys.stderr, flush=True)
    with _analyst_safe_data_errors(record, requester):
        with _progress_bar(f"run {run_id[:8]}", 100, "%") as bar:
            result = charge_and_mine(ledger, name, params, requester=requester,
                                     seed=args.seed, run_id=run_id,
                                     progress=_fraction_progress(bar))
            bar.update(100 - bar.n)
    try:
        _export(result, family, out, fmt)
    except OSError as exc:
        print(f"error: the result of run {run_id} is stored in the ledger but could not be "
              f"written to {args.out!r} ({exc}); fetch it with "
              f"`python -m dpcore result {run_id} --out FILE`", file=sys.stderr)
        return 1
    if out is not None:
        print(f"run {run_id}: {_summary(result, family)} written to {args.out}",
              file=sys.stderr)
    budget = result.run_budget()
    if budget is not None and budget.refunded_nano:
        print(f"run {run_id}: spent ε = {budget.spent:g} of the ε = {budget.charged:g} "
              f"charged; ε = {budget.refunded:g} returned to {name!r} (it stopped early on "
              "released values)", file=sys.stderr)
    for warning in getattr(result, "warnings", ()):
        print(f"run {run_id}: warning: {warning}", file=sys.stderr)
    return 0


def _confirmed(question: str) -> bool:
    """Ask ``question`` on the terminal (stderr); True only for an explicit yes. Without a
    terminal to ask on, refuse (ParameterError): a paid query needs ``--yes`` or a person."""
    if not sys.stdin.isatty():
        raise ParameterError("this query spends budget and there is no terminal to confirm "
                             "on; give --yes to pay without asking. Nothing was charged")
    print(question + " [y/N] ", end="", file=sys.stderr, flush=True)
    try:
        answer = input()
    except EOFError:
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def _query_json(result, table) -> dict:
    """``query``'s output: the released 4-cell table and its statistics (DP releases)."""
    red = result.redescriptions[0]
    return {"run_id": result.run_id, "dataset": result.dataset, "epsilon": result.epsilon,
            "left": red.left.text, "right": red.right.text,
            "cells": dict(zip(("E11", "E10", "E01", "E00"), table.cells)),
            "support_left": table.support_left, "support_right": table.support_right,
            "support_both": table.support_both, "jaccard": table.jaccard,
            "pvalue": table.pvalue, "n": table.n}


def _map_json(result, counts, sd: float) -> dict:
    """``query --map``'s output: per grid cell its public bounds and noisy E11/E10/E01."""
    return {"run_id": result.run_id, "dataset": result.dataset, "epsilon": counts.epsilon,
            "left": counts.left_text, "right": counts.right_text, "noise_sd_rows": sd,
            "cells": [{"cell": k, "lon_lo": b[0], "lat_lo": b[1], "lon_hi": b[2],
                       "lat_hi": b[3], "E11": c[0], "E10": c[1], "E01": c[2]}
                      for k, (b, c) in enumerate(zip(counts.bounds.tolist(),
                                                     counts.counts.tolist()))]}


def cmd_query(args) -> int:
    """A paid query pair of the analyst's own: its noisy 4-cell table, or with ``--map`` its
    noisy E11/E10/E01 counts per cell of the declared location grid (ε-DP releases)."""
    import json

    # The query modules pull in SciPy (the p-value): only this command pays for them.
    from dpcore.redescriptions.custom_query import CustomQueryParams, parse_pair, query_table
    from dpcore.redescriptions.regions import (
        RegionMapParams,
        location_of,
        map_counts,
        noise_sd,
    )

    kind = RegionMapParams if args.map else CustomQueryParams
    epsilon = kind.epsilon if args.epsilon is None else args.epsilon
    params = kind(epsilon=epsilon, left_query=args.left, right_query=args.right).validate()
    out = _check_out(args.out)
    requester = _requester(args)
    ledger = Ledger(args.ledger)
    record = ledger._dataset_record(args.dataset)
    check_dataset_kind(record, params.algorithm)
    if args.map:
        location_of(record.schema)
    left, right = parse_pair(record.schema, params.left_query, params.right_query)
    authorize_run(record, params, requester, seed=args.seed)
    cost = run_cost(params)
    remaining = ledger.budget(record.name).remaining
    what = "noisy map" if args.map else "noisy 4-cell table"
    print(f"query on {record.name!r}: {left.text}  ⇔  {right.text}\n"
          f"its {what} costs ε = {nano_to_epsilon(cost):g} (remaining: ε = {remaining:g}); "
          "spent budget is never refunded", file=sys.stderr, flush=True)
    if not args.yes and not _confirmed(f"spend ε = {nano_to_epsilon(cost):g} of "
                                       f"{record.name!r}?"):
        print("not paid: nothing was charged", file=sys.stderr)
        return 1
    run_id = new_run_id()
    with _analyst_safe_data_errors(record, requester):
        result = charge_and_mine(ledger, record.name, params, requester=requester,
                                 seed=args.seed, run_id=run_id)
    if args.map:
        payload = _map_json(result, map_counts(result, record.schema), noise_sd(epsilon))
    else:
        payload = _query_json(result, query_table(result))
    try:
        _write_out(out, json.dumps(payload, ensure_ascii=False, indent=2))
    except OSError as exc:
        print(f"error: the result of run {run_id} is stored in the ledger but could not be "
              f"written to {args.out!r} ({exc}); fetch it with "
              f"`python -m dpcore result {run_id} --out FILE`", file=sys.stderr)
        return 1
    print(f"run {run_id}: paid ε = {nano_to_epsilon(cost):g}; stored, fetch it again with "
          f"`python -m dpcore result {run_id}`", file=sys.stderr)
    return 0


def cmd_result(args) -> int:
    out = _check_out(args.out)
    requester = _requester(args)
    ledger = Ledger(args.ledger)
    family = algorithm_spec(ledger.get_run(args.run_id).algorithm).family
    fmt = _out_format(args.out, family)
    try:
        result = load_result(ledger, args.run_id, requester=requester)
    except RunInProgressError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    _export(result, family, out, fmt)
    return 0


def cmd_runs(args) -> int:
    role = _requester(args).role
    ledger = Ledger(args.ledger)
    runs = ledger.list_runs(args.dataset)
    if not runs:
        print(f"{args.dataset}: no runs yet")
        return 0
    print(f"{'run id':32}  {'started (UTC)':19}  {'account':16}  {'algorithm':20}  "
          f"{'mode':8}  {'ε charged':>10}  {'ε spent':>10}  {'ε returned':>10}  status")
    for run in runs:
        hidden = not can_read(run.audience, role)
        status = {"charged": "charged, no result yet (running, or its process was killed)",
                  "done": "done", "failed": "failed" + ("" if hidden else f": {run.error}")
                  }[run.status]
        if run.audience == OWNER_ONLY:
            status += " [owner only]"
        print(f"{run.run_id:32}  {run.created_at[:19].replace('T', ' '):19}  "
              f"{run.account or '-':16}  {run.algorithm:20}  "
              f"{run.params.get('mode', STRICT):8}  {run.epsilon:>10.6g}  "
              f"{nano_to_epsilon(run.spent_nano):>10.6g}  "
              f"{nano_to_epsilon(run.refunded_nano):>10.6g}  {status}")
    return 0


def cmd_users(args) -> int:
    """``users add|disable|list|quota``: the owner manages who may spend (no sign-in asked:
    whoever can write the ledger holds every row already, as for ``ledger copy``)."""
    from dpcore.privacy.accounts import add_user
    from dpcore.privacy.roles import read_password_from_stdin

    ledger = Ledger(args.ledger)
    actor = f"cli:{os.environ.get('USER', '?')}"
    if args.users_command == "list":
        for a in ledger.list_accounts():
            how = ", ".join(x for x in ("password" if a.has_password else "",
                                        f"identity {a.external_identity}"
                                        if a.external_identity else "") if x)
            state = f"disabled {a.disabled_at[:19]}" if a.disabled_at else "active"
            print(f"{a.name:24}  {a.role:8}  {state:28}  {how}")
        return 0
    if args.users_command == "disable":
        record = ledger.disable_account(args.name, actor=actor)
        print(f"{record.name}: disabled (it can no longer sign in or spend; its charges stay)",
              file=sys.stderr)
        return 0
    if args.users_command == "quota":
        status = ledger.set_quota(args.dataset, args.name, args.epsilon, actor=actor)
        print(f"{args.name} may spend ε = {args.epsilon:g} of {args.dataset!r} (spent: "
              f"ε = {status.spent:g}; the dataset has ε = {status.dataset.remaining:g} left)",
              file=sys.stderr)
        return 0
    password = password_hash = None
    if args.password_hash:
        password_hash = args.password_hash
    elif args.password_stdin:
        password = read_password_from_stdin()
    elif not args.identity:
        password = getpass.getpass(f"password for {args.name}: ")
        if not password or getpass.getpass("repeat it: ") != password:
            raise ParameterError("the passwords are empty or differ; no account was added")
    if password is not None:
        record = add_user(ledger, args.name, args.role, actor=actor, password=password,
                          identity=args.identity)
    else:
        record = ledger.add_account(args.name, args.role, actor=actor,
                                    password_hash=password_hash,
                                    external_identity=args.identity)
    print(f"{record.name}: {record.role} account added", file=sys.stderr)
    for dataset, epsilon in args.quota or ():
        ledger.set_quota(dataset, record.name, epsilon, actor=actor)
        print(f"{record.name} may spend ε = {epsilon:g} of {dataset!r}", file=sys.stderr)
    return 0


def cmd_workspaces(args) -> int:
    """``workspaces list|share|unshare``: an account's Explore workspaces, as that account.

    The account signs in (``--user`` / ``$DPRM_USER``, its password checked against the
    ledger), so it shares only its own workspaces and lists only its own and those shared
    with it: the ledger refuses any other (:meth:`dpcore.privacy.ledger.Ledger.share_workspace`).
    """
    session = _sign_in_or_exit(args)
    ledger = Ledger(args.ledger)
    me = session.account
    if args.workspaces_command == "list":
        rows = [(w, "yours") for w in ledger.list_workspaces(args.dataset, me)]
        rows += [(w, "shared with you") for w in ledger.workspaces_shared_with(args.dataset, me)]
        if not rows:
            print(f"{args.dataset}: no workspaces of {me} or shared with {me}")
        for w, whose in rows:
            # the name Explore opens it by: a colleague's as "colleague/name"
            opened_as = w.name if w.account == me else f"{w.account}/{w.name}"
            print(f"{opened_as:40}  revision {w.revision:<5}  updated "
                  f"{w.updated_at[:19].replace('T', ' ')}  {whose}")
        return 0
    if args.workspaces_command == "share":
        ledger.share_workspace(args.dataset, me, args.name, args.colleague)
        print(f"shared: {args.colleague} opens it on Explore as {me}/{args.name} (and may "
              "save it)", file=sys.stderr)
        return 0
    if ledger.unshare_workspace(args.dataset, me, args.name, args.colleague):
        print(f"{args.colleague} no longer opens {me}/{args.name}", file=sys.stderr)
    else:
        print(f"{me}/{args.name} was not shared with {args.colleague}", file=sys.stderr)
    return 0


def _quota_arg(text: str) -> tuple[str, float]:
    """``DATASET=EPSILON`` → (dataset, ε)."""
    name, sep, value = text.partition("=")
    try:
        if not sep or not name:
            raise ValueError
        return name, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--quota: expected DATASET=EPSILON, e.g. "
                                         f"clinic=2.5; got {text!r}") from None


def _batch_progress(bar: tqdm, states: dict):
    """``run_batch``'s ``progress(run_id, state, detail)``: one line per state change on
    stderr, above a bar of finished runs."""
    def progress(run_id: str, state: str, detail: dict) -> None:
        states[run_id] = state
        if state == "mining":
            bar.set_postfix_str(f"{run_id[:8]}: {100 * (detail.get('fraction') or 0):.0f}% "
                                f"{str(detail.get('message', ''))[:40]}")
            return
        text = {"running": f"running (attempt {detail.get('attempt')}"
                           + (", a worker was lost" if (detail.get("attempt") or 1) > 1 else "")
                           + f") on {detail.get('worker')}",
                "charged": "charged", "resumed": "resumed (charged before, no result yet)",
                "replayed": "stored before: replayed (no charge)",
                "done": f"done, stored (attempts: {detail.get('attempts')})",
                "failed": f"failed: {detail.get('error')}",
                "refused": f"not charged: {detail.get('error')}"}.get(state, state)
        bar.write(f"run {run_id}: {text}", file=sys.stderr)
        if state in ("done", "failed", "refused", "replayed"):
            bar.update(1)
    return progress


def cmd_batch(args) -> int:
    from dpcore.distributed.batch import run_batch
    from dpcore.distributed.cluster import open_client, scheduler_address
    from dpcore.distributed.plan import check_plan, read_plan

    out_dir = Path(args.out_dir) if args.out_dir else None
    if out_dir is not None and not out_dir.is_dir():
        raise ParameterError(f"--out-dir {args.out_dir!r} is not an existing folder")
    address = scheduler_address(args.scheduler)
    requester = _requester(args)
    ledger = Ledger(args.ledger)
    planned = check_plan(ledger, read_plan(args.plan), requester)
    new = [r for r in planned if r.state == "new"]
    print(f"plan {args.plan}: {len(planned)} runs checked ({len(new)} new, costing "
          f"ε = {nano_to_epsilon(sum(r.cost_nano for r in new)):g}); each is charged before "
          f"it is dispatched to {address or 'a LocalCluster'}"
          + ("" if any(r.state != "done" for r in planned) else " (all stored: replayed)"),
          file=sys.stderr, flush=True)
    states: dict[str, str] = {}
    # A plan whose runs are all stored already only replays them: no cluster to start.
    cluster = (open_client(address, workers=args.workers)
               if any(r.state != "done" for r in planned) else nullcontext(None))
    with _progress_bar("batch", len(planned), "run", counts=True) as bar, cluster as client:
        outcomes = run_batch(ledger, planned, client, progress=_batch_progress(bar, states))
    failed = 0
    for o in outcomes:
        print(f"{o.run_id}\tentry {o.entry}\t{o.status}\tattempts {o.attempts}"
              + (f"\t{o.error}" if o.error else ""))
        if o.status not in ("done", "replayed"):
            failed += 1
        elif out_dir is not None and o.result is not None:
            _write_out(out_dir / f"{o.run_id}.json", o.result.to_json())
    return 1 if failed else 0


def _csv(kind, what: str):
    def parse(text: str):
        try:
            return [kind(x.strip()) for x in text.split(",") if x.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what}: expected a comma-separated list of "
                                             f"{kind.__name__} values; got {text!r}") from None
    return parse


def cmd_experiment(args) -> int:
    _owner_or_exit(args)    # before the harness's imports: a refused caller waits for nothing
    from dpcore.experiments.harness import run_experiment

    command = "python -m dpcore " + " ".join(sys.argv[1:]) if args.argv is None else \
        "python -m dpcore " + " ".join(args.argv)
    if args.family != REDESCRIPTIONS:
        if args.scheduler is not None:
            raise ParameterError("--scheduler runs the redescription grid on Dask; the "
                                 f"{args.family} harness runs in this process")
        if args.mode != STRICT:
            raise ParameterError(f"--mode {args.mode} applies to the redescription grid; the "
                                 f"{args.family} harness sets its modes itself")
        return _family_experiment(args, command)
    if args.data is None:
        raise ParameterError("experiment --family redescriptions needs --data (a dataset "
                             "folder or schema file)")
    args.epsilons = args.epsilons or [1.0, 0.1, 0.01]
    args.runs = args.runs or [10, 10, 100]
    with _progress_bar("experiment", None, "run", counts=True) as bar:
        metrics = run_experiment(args.data, args.algorithms, args.epsilons, args.runs,
                                 args.prune, args.out, seed=args.seed,
                                 processes=args.processes, progress=_count_progress(bar),
                                 mc_iter=args.mc_iter, reference_runs=args.reference_runs,
                                 tolerance=args.tolerance, command=command,
                                 scheduler=args.scheduler, mode=args.mode)
    print(f"report written to {Path(args.out) / 'report.md'} "
          f"({metrics['seconds']:.1f} s; NOT private: owner/teaching only)", file=sys.stderr)
    return 0


def _family_experiment(args, command: str) -> int:
    """``experiment --family sequences|synthesis``: the PFS2 / MC-GEN evaluation grids
    (NOT private; sandbox accountants, never the ledger)."""
    runs = args.runs or [3]
    if len(runs) != 1:
        raise ParameterError(f"--family {args.family}: --runs takes one value (runs per "
                             f"cell); got {len(runs)}")
    if args.data is not None:
        raise ParameterError(f"--family {args.family} reads no --data: sequences use "
                             "generated shapes (--shapes), synthesis tables come from "
                             "--table and --generated")
    with _progress_bar("experiment", None, "run", counts=True) as bar:
        if args.family == SEQUENCES:
            from dpcore.experiments.sequences import parse_thetas, run_sequence_experiment
            chosen = [a for a in args.algorithms if a in family_algorithms(SEQUENCES)]
            metrics = run_sequence_experiment(
                args.out, shapes=args.shapes, thetas=parse_thetas(args.theta or []),
                epsilons=args.epsilons or [1.0, 0.1], runs=runs[0], scale=args.scale,
                algorithms=chosen or family_algorithms(SEQUENCES),
                truth=args.truth, seed=args.seed, progress=_count_progress(bar),
                command=command)
        else:
            from dpcore.experiments.synthesis import run_synthesis_experiment
            metrics = run_synthesis_experiment(
                args.out, tables=args.table or [], generated=args.generated or [],
                epsilons=args.epsilons or [0.1, 1.0, 10.0], rounds=runs[0], k=args.k,
                rows=args.rows, faithful_rows=args.faithful_rows,
                peers_python=args.peers_python, seed=args.seed,
                progress=_count_progress(bar), command=command)
    print(f"report written to {Path(args.out) / 'report.md'} "
          f"({metrics['seconds']:.1f} s; NOT private: owner/teaching only)", file=sys.stderr)
    return 0


def _add_mine_arguments(mine: argparse.ArgumentParser, choices: tuple[str, ...],
                        default: str) -> None:
    """The flags of ``mine`` / ``synthesize``: ε, mode, ``--stable`` (if ``choices`` has a tree
    miner), then every parameter of ``choices`` from the registry (:func:`_family_flags`; not
    given: the algorithm's default)."""
    mine.add_argument("--dataset", help="registered dataset name (default: the schema name "
                                        "of --data)")
    mine.add_argument("--data", help="optional check: a dataset folder or schema file that "
                                     "must hold the registered data (refused otherwise); the "
                                     "registered copy is always what is mined")
    mine.add_argument("--algorithm", choices=choices, default=default,
                      help="; ".join(f"{k}: {ALGORITHM_SPECS[k].blurb}" for k in choices))
    for name in ("epsilon", "mode"):
        declared = _MINE_FIELDS[name]
        mine.add_argument(declared.flag, type=declared.kind, choices=declared.choices or None,
                          default=declared.default, help=declared.help)
    if any(k in TREE_ALGORITHMS for k in choices):
        mine.add_argument("--stable", type=int, metavar="K",
                          help="paper's 'stable' setting for AltMCMC/AltExpM: InTr = K, RMIter = 1")
    mine.add_argument("--seed", type=int, help="fixed seed: public demo datasets only "
                                               "(refused on private data, which always "
                                               "draws fresh OS entropy)")
    mine.add_argument("--owner", action="store_true",
                      help="run as the data owner (signs in an owner account: --user, or the "
                           "only one); needed for faithful mode on private data, whose result "
                           "only the owner reads")
    mine.add_argument("--actor", default="cli", help="who spends (audit log)")
    mine.add_argument("--dry-run", action="store_true",
                      help="check the run and print its cost and the accuracy to expect "
                           "(sequences, synthesis), then stop: nothing is charged")
    mine.add_argument("--expected-records", type=int, metavar="N",
                      help="with --dry-run, sequences: the number of records you expect (a "
                           "count you state, never read from the data), for the accuracy "
                           "statement")
    for name, flag in _family_flags().items():
        if set(flag.users) & set(choices):
            # argparse formats help with %; not given: the algorithm's default
            mine.add_argument(_flag(name), type=flag.kind, choices=flag.choices,
                              default=argparse.SUPPRESS, help=flag.help.replace("%", "%%"))
    mine.add_argument("--out", default="-",
                      help="output file ('-' = JSON on stdout); .json: the result JSON, .csv: "
                           "the frequent sequences or the synthetic table, .parquet: the "
                           "synthetic table. Checked before anything is charged")
    mine.set_defaults(func=cmd_mine)


def _add_account_commands(sub) -> None:
    """``users`` (owner: accounts and quotas) and ``workspaces`` (an account's own)."""
    usr = sub.add_parser("users", help="owner: accounts and quotas (who may spend how much)")
    usr_sub = usr.add_subparsers(dest="users_command", required=True)
    add = usr_sub.add_parser("add", help="add an analyst or owner account (asks the password "
                                         "twice)")
    add.add_argument("name")
    add.add_argument("--role", choices=(ANALYST, OWNER), default=ANALYST)
    add.add_argument("--password-stdin", action="store_true",
                     help="read the password from standard input (one line)")
    add.add_argument("--password-hash", help="store this scrypt hash (python -m dpcore "
                                             "owner-hash) instead of asking")
    add.add_argument("--identity", help="a verified identity ISSUER|SUBJECT of the server's "
                                        "OpenID Connect provider that signs in as this account")
    add.add_argument("--quota", action="append", type=_quota_arg, metavar="DATASET=EPSILON",
                     help="the analyst's share of a dataset's cap (repeatable)")
    dis = usr_sub.add_parser("disable", help="disable an account for good (charges stay)")
    dis.add_argument("name")
    usr_sub.add_parser("list", help="every account, its role and state")
    quo = usr_sub.add_parser("quota", help="set an analyst's share of a dataset's cap")
    quo.add_argument("name")
    quo.add_argument("--dataset", required=True)
    quo.add_argument("--epsilon", type=float, required=True,
                     help="ε the analyst may spend on the dataset in total (0: no more)")
    usr.set_defaults(func=cmd_users)

    wsp = sub.add_parser("workspaces", help="your Explore workspaces: list them, share one "
                                            "with a named colleague (signs in: --user)")
    wsp_sub = wsp.add_subparsers(dest="workspaces_command", required=True)
    wsl = wsp_sub.add_parser("list", help="your workspaces of a dataset and those shared "
                                          "with you")
    wsl.add_argument("dataset")
    for verb, text in (("share", "let a named colleague open and save one of your "
                                 "workspaces"),
                       ("unshare", "take a share back")):
        one = wsp_sub.add_parser(verb, help=text)
        one.add_argument("dataset")
        one.add_argument("name", help="the workspace's name (as typed on Explore)")
        one.add_argument("colleague", help="the colleague's account")
    wsp.set_defaults(func=cmd_workspaces)


def cmd_prefill_schema(args) -> int:
    """Guess a two-view dataset's schema from its two view files and write it for review.

    OWNER ONLY: the guess (observed categories and ranges) and the notes on columns left out
    (they quote cell values) are derived from the private data. Nothing is registered and
    no ε is spent; the owner edits the written file and then runs ``register`` on its
    folder, which declares it public. An existing file is never overwritten.
    """
    # pandas is imported here, not at the top: `--help`, `budget` and a mine stay light
    from dpcore.data.loading import join_view_ids, read_table
    from dpcore.data.names import check_dataset_name
    from dpcore.data.prefill import prefill
    from dpcore.data.schema import save_schema

    _owner_or_exit(args)
    out = Path(args.out)
    if out.exists():
        raise DataError(f"{str(out)!r} exists; prefill never overwrites a schema (move it or "
                        "give another --out)")
    if not out.parent.is_dir():
        raise DataError(f"the folder of --out does not exist: {str(out.parent)!r}")
    name = check_dataset_name(args.name)
    left, right = (read_table(args.left), read_table(args.right))
    files = (Path(args.left).name, Path(args.right).name)
    if files[0] == files[1]:
        raise DataError("the two view files must have different names", file=files[1])
    join_view_ids(left, right, args.id_column, left_file=files[0], right_file=files[1])
    result = prefill(left, right, name, args.id_column, files=files)
    save_schema(result.schema, out)
    print(f"wrote {str(out)!r}: {len(result.schema.attributes)} attributes guessed from the "
          "data (OWNER ONLY: review every type and domain, then put the view files beside it "
          "and run `register` on that folder)", file=sys.stderr)
    for note in result.notes:
        print(f"  left out {note.column!r} ({note.file or '?'}): {note.reason}", file=sys.stderr)
    return 0


def _add_dataset_commands(sub) -> None:
    """``register`` (owner) and ``budget``."""
    reg = sub.add_parser("register", help="owner: register a dataset folder with a budget cap; "
                                          "its schema file becomes the confirmed public "
                                          "declaration")
    reg.add_argument("--data", required=True,
                     help="dataset folder with schema.json/.toml (two-view table), "
                          "sequence_schema.json (sequences) or synthesis_schema.json "
                          "(labelled table)")
    reg.add_argument("--name", help="dataset name in the ledger (default: the schema's name)")
    reg.add_argument("--cap", type=float, required=True, help="total ε the dataset may spend")
    reg.add_argument("--max-rows", type=int, default=None,
                     help="a public upper bound on the dataset's rows (items for sequences), "
                          "checked against the data; the Dask preflight sizes workers' memory "
                          "from it, never from the private row count")
    reg.set_defaults(func=cmd_register)

    pre = sub.add_parser("prefill-schema", help="owner: guess a two-view dataset's schema "
                                                "from its view files and write it for review "
                                                "(reads private data; registers nothing)")
    pre.add_argument("--left", required=True, help="left view file (CSV, TSV or Parquet)")
    pre.add_argument("--right", required=True, help="right view file")
    pre.add_argument("--id-column", required=True, help="the column joining the two views")
    pre.add_argument("--name", required=True, help="dataset name")
    pre.add_argument("--out", required=True, help="schema file to write (never overwritten), "
                                                  "e.g. DATASET_FOLDER/schema.json")
    pre.set_defaults(func=cmd_prefill_schema)

    bud = sub.add_parser("budget", help="show a dataset's cap, spent and remaining ε")
    bud.add_argument("name")
    bud.set_defaults(func=cmd_budget)


def _add_mining_commands(sub) -> None:
    """``mine`` (every family's miners; flags from the registry) and ``synthesize``."""
    mine = sub.add_parser("mine", help="run one DP miner (any family), charged to the ledger",
                          formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    # custom_query and region_map are paid queries (`query`), not miners
    _add_mine_arguments(mine, tuple(a for a in ALGORITHM_SPECS if a not in REDESCRIPTION_QUERIES),
                        _MINE_FIELDS["algorithm"].default)
    synth = sub.add_parser("synthesize", help="generate a DP synthetic table (MC-GEN, the "
                                              "floor) from a labelled table, charged to the "
                                              "ledger",
                           formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    _add_mine_arguments(synth, family_algorithms(SYNTHESIS), MCGEN)


def _add_query_command(sub) -> None:
    """``query``: a paid query pair of the analyst's own (or its noisy map)."""
    qry = sub.add_parser("query", help="pay for a query pair of your own: its noisy 4-cell "
                                       "table (or, with --map, its noisy counts per cell of "
                                       "the dataset's location grid), charged to the ledger")
    qry.add_argument("--dataset", required=True, help="registered two-view dataset name")
    qry.add_argument("--left", required=True,
                     help="left-view query in the export's syntax, e.g. "
                          "'([A] ∧ [B = x]) ∨ [C > 2]': declared attributes, public grid "
                          "thresholds, declared categories only")
    qry.add_argument("--right", required=True,
                     help="right-view query, e.g. '[300 < LAB_BNP ≤ 800]'")
    qry.add_argument("--epsilon", type=float,
                     help="ε this query spends (default 0.1; with --map 0.5): one discrete "
                          "Laplace draw of scale 1/ε rows per released count")
    qry.add_argument("--map", action="store_true",
                     help="release where the pair holds: noisy E11/E10/E01 counts per cell "
                          "of the schema's declared location grid")
    qry.add_argument("--yes", action="store_true",
                     help="pay without asking (without it, the cost is shown and a yes is "
                          "asked on the terminal; no terminal: refused, nothing charged)")
    qry.add_argument("--seed", type=int, help="fixed seed: public demo datasets only "
                                              "(refused on private data)")
    qry.add_argument("--owner", action="store_true",
                     help="run as the data owner (signs in an owner account: --user, "
                          "or the only one)")
    qry.add_argument("--actor", default="cli", help="who spends (audit log)")
    qry.add_argument("--out", default="-",
                     help="output file ('-' = JSON on stdout): the released table or map as "
                          "JSON. Checked before anything is charged")
    qry.set_defaults(func=cmd_query)


def _add_run_commands(sub) -> None:
    """``batch``, ``result`` and ``runs``."""
    bat = sub.add_parser("batch", help="run a plan file of many runs on a Dask cluster, each "
                                       "charged to the ledger before it is dispatched")
    bat.add_argument("plan", help="plan file (.json or .toml): a list 'runs' of entries with "
                                  "dataset, algorithm, optional run_id and seed, and the "
                                  "algorithm's parameters by name; checked in full before "
                                  "anything is charged")
    bat.add_argument("--scheduler", metavar="ADDRESS",
                     help="Dask scheduler, tcp://host:8786 (default: $DPRM_SCHEDULER, else a "
                          "LocalCluster; 'local' forces a LocalCluster)")
    bat.add_argument("--workers", type=int, default=2,
                     help="LocalCluster only: worker processes (one thread each)")
    bat.add_argument("--out-dir", help="write each stored result as RUN_ID.json into this "
                                       "folder (read back from the ledger)")
    bat.add_argument("--owner", action="store_true",
                     help="run as the data owner (signs in an owner account: --user, "
                          "or the only one)")
    bat.add_argument("--actor", default="cli", help="who spends (audit log)")
    bat.set_defaults(func=cmd_batch)

    res = sub.add_parser("result", help="fetch a stored result as JSON (0 ε: it was paid "
                                        "for when it was mined)")
    res.add_argument("run_id")
    res.add_argument("--out", default="-", help="output file ('-' = JSON on stdout): .json, "
                                                "or .csv (frequent sequences, synthetic table) "
                                                "or .parquet (synthetic table)")
    res.add_argument("--owner", action="store_true",
                     help="read as the owner (owner-only results; signs in an owner account)")
    res.add_argument("--actor", default="cli", help=argparse.SUPPRESS)
    res.set_defaults(func=cmd_result)

    runs = sub.add_parser("runs", help="a dataset's runs: id, algorithm, ε charged, status "
                                       "(charged-without-result shown as such)")
    runs.add_argument("dataset")
    runs.add_argument("--owner", action="store_true",
                      help="read as the owner (failure messages of owner-only runs)")
    runs.add_argument("--actor", default="cli", help=argparse.SUPPRESS)
    runs.set_defaults(func=cmd_runs)


def _add_experiment_command(sub) -> None:
    """``experiment`` (owner/teaching, NOT private): every family's evaluation."""
    exp = sub.add_parser("experiment", help="owner/teaching: the paper's evaluation grid "
                                            "(NOT private; sandbox budget, never the ledger)",
                         formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    exp.add_argument("--family", choices=(REDESCRIPTIONS, SEQUENCES, SYNTHESIS),
                     default=REDESCRIPTIONS,
                     help="which family's evaluation: redescriptions (--data), sequences "
                          "(PFS2 vs the baseline on generated shapes) or synthesis (the "
                          "utility report)")
    exp.add_argument("--data", help="redescriptions: dataset folder or schema file")
    exp.add_argument("--algorithms", type=_csv(str, "--algorithms"),
                     default=",".join(ALGORITHMS),
                     help="comma-separated, from: " + "; ".join(
                         f"{name} = {setting.label}" for name, (_, setting)
                         in presets().items()) + ". All runs of one ε spend that same ε. "
                         "--family sequences: " + ", ".join(family_algorithms(SEQUENCES))
                         + " (default both)")
    exp.add_argument("--epsilons", type=_csv(float, "--epsilons"),
                     help="comma-separated ε values (default 1,0.1,0.01; sequences 1,0.1; "
                          "synthesis 0.1,1,10)")
    exp.add_argument("--runs", type=_csv(int, "--runs"),
                     help="runs per ε (aligned with --epsilons; one value applies to all; "
                          "default 10,10,100). Sequences: runs per cell, synthesis: random "
                          "splits per scenario (default 3)")
    exp.add_argument("--prune", default="auto",
                     help="noisy-support threshold, or 'auto' (suggested threshold per "
                          "algorithm × ε from the pooled released runs)")
    exp.add_argument("--tolerance", type=float, default=0.1,
                     help="--prune auto: largest expected |noisy J − true J|")
    exp.add_argument("--out", required=True, help="report folder")
    exp.add_argument("--processes", type=int, default=1, help="parallel worker processes")
    exp.add_argument("--scheduler", metavar="ADDRESS",
                     help="run the trials on a Dask cluster: tcp://host:8786, or 'local' (a "
                          "LocalCluster of max(2, --processes) worker processes); default: "
                          "in this process, or the --processes pool")
    exp.add_argument("--seed", type=int, default=0, help="run i uses seed + i")
    exp.add_argument("--mc-iter", type=int, help="override MCIter of the tree miners (quick "
                                                 "looks; Serenade runs no chain)")
    exp.add_argument("--reference-runs", type=int,
                     help="runs of the ε = ∞ reference (default: the largest --runs; 0 = none)")
    exp.add_argument("--mode", choices=(STRICT, FAITHFUL), default=STRICT,
                     help="redescriptions: strict (every run ε-DP) or faithful (the paper's "
                          "code as written, NOT ε-DP; the report's title names the mode)")
    seq = exp.add_argument_group("--family sequences")
    seq.add_argument("--shapes", type=_csv(str, "--shapes"), default="msnbc,bible,house_power",
                     help="generated data shapes: msnbc, bible, house_power (the PFS2 "
                          "paper's), power_runs_width, power_runs_quantile (House_Power's "
                          "size with long constant runs, two binnings)")
    seq.add_argument("--theta", action="append", metavar="SHAPE=θ,θ,…",
                     help="θ grid of one shape (repeatable; default: the paper's)")
    seq.add_argument("--scale", type=float, default=1.0,
                     help="share of each shape's full number of records, in (0, 1]")
    seq.add_argument("--truth", choices=("auto", "prefixspan", "dpcore"), default="auto",
                     help="exact miner for the ground truth (auto: prefixspan if installed)")
    syn = exp.add_argument_group("--family synthesis")
    syn.add_argument("--table", action="append", metavar="PATH",
                     help="a labelled table: a dataset folder (synthesis_schema.json), or a "
                          "CSV whose 'label' column comes first and whose features are "
                          "scaled to [-1, 1] (repeatable); read in place, never copied")
    syn.add_argument("--generated", type=_csv(str, "--generated"),
                     help="generated tables: pima_like, adult_like")
    syn.add_argument("--rows", type=int, help="generated tables: rows (default: full size)")
    syn.add_argument("--k", type=int, default=100, help="records per cell / MDAV cluster")
    syn.add_argument("--faithful-rows", type=int, default=5000,
                     help="faithful MC-GEN (MDAV, quadratic) only on tables of at most this "
                          "many rows (0: never)")
    syn.add_argument("--peers-python", metavar="PYTHON",
                     help="a Python with smartnoise-synth (the 'peers' extra) to run MST and "
                          "AIM as peers")
    exp.set_defaults(func=cmd_experiment, argv=None)


def _add_maintenance_commands(sub) -> None:
    """``owner-hash`` and ``ledger copy``."""
    own = sub.add_parser("owner-hash", help="print the scrypt hash of a new owner password "
                                            "(asks twice; --stdin: read it from a pipe)")
    own.add_argument("--stdin", action="store_true", help="read the password from stdin")
    own.set_defaults(func=lambda args: hash_command(stdin=args.stdin))

    # Ledger maintenance: copy a whole ledger to another backend (dpcore.privacy.ledger.copying).
    from dpcore.privacy.ledger.copying import copy_command
    ledger_cmd = sub.add_parser("ledger", help="ledger maintenance: 'ledger copy' moves a "
                                               "whole ledger to another backend")
    ledger_sub = ledger_cmd.add_subparsers(dest="ledger_command", required=True)
    copy = ledger_sub.add_parser("copy", help="copy datasets, caps, charges, runs, results "
                                              "and the login log into a new, empty ledger "
                                              "(refused if the target holds anything)")
    copy.add_argument("--from", dest="source", required=True,
                      help="source ledger: sqlite:PATH (or a path) or postgresql://…")
    copy.add_argument("--to", dest="target", required=True,
                      help="target ledger, empty: postgresql://user:password@host:port/db "
                           "or sqlite:PATH")
    for flag, side in (("--from-results", "source"), ("--to-results", "target")):
        copy.add_argument(flag, dest=f"{side}_results", default=None,
                          help=f"the {side} ledger's results store, if it is PostgreSQL "
                               "(default $DPRM_RESULTS_DIR; a SQLite ledger's is FILE.results/)")
    copy.set_defaults(func=lambda args: copy_command(
        args.source, args.target, source_results=args.source_results,
        target_results=args.target_results))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m dpcore", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ledger", help="ledger SQLite file (default: $DPRM_LEDGER, else "
                                         "~/.local/share/dprm/ledger.sqlite)")
    parser.add_argument("--user", help="your account: signs in (password from "
                                       "$DPRM_PASSWORD, else asked); default $DPRM_USER. "
                                       "Runs on private data of a ledger with accounts need it")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_dataset_commands, _add_mining_commands, _add_query_command,
                _add_run_commands, _add_experiment_command, _add_account_commands,
                _add_maintenance_commands):
        add(sub)
    return parser


def run_and_exit() -> None:
    """``python -m dpcore``: run :func:`main` on ``sys.argv`` and end the process with its status.

    Two settings of the cyclic garbage collector for this one short-lived process (issue 19):

    * the youngest generation is collected after 50,000 net allocations instead of 700, so
      the objects that importing numba, SciPy and the kernels creates (all of which live to
      the end) are not rescanned some 300 times: ≈ 0.1 s of CPU per warm ``mine``. Garbage
      in reference cycles waits a little longer; reference counting frees the rest at once;
    * before exiting, :func:`gc.freeze` moves every object to the permanent generation, so
      the interpreter's final collections skip them: tearing down numba's, LLVM's and
      NumPy's objects that way costs a warm ``mine`` about a quarter of a second of CPU.
      Everything the command writes is written and closed by then (the ledger's
      transactions are committed, ``--out`` is written atomically, the progress bar and a
      Dask client are closed by their ``with`` blocks); ``atexit`` handlers and the
      destructors of objects freed by reference counting still run. Only objects in
      reference cycles are left to the end of the process.

    Not for in-process callers (tests, the app): they call :func:`main`.
    """
    import gc

    gc.set_threshold(50_000, 20, 10)
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()
    sys.exit(status)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "experiment" and argv is not None:
        args.argv = list(argv)
    try:
        return args.func(args)
    except DpcoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
