"""Preflight of a Dask cluster before a batch charges anything.

A run charged to a cluster that cannot mine it loses its ε: the charge is kept when the run
fails. So :func:`check_cluster` asks the cluster, before the first charge of
:func:`dpcore.distributed.batch.run_batch`, whether it can mine the plan's runs at all, and
refuses the whole batch (:class:`PreflightError`, nothing charged) when

- the scheduler or a worker cannot import ``dpcore``, or imports another version of it: its
  ``dpcore.__version__`` and :func:`dpcore.source_digest` (a SHA-256 of every Python source
  of the package) must equal the client's. The scheduler unpickles the batch's tasks and
  the workers run them, so both need this very code (an older checkout on a worker could
  mine with other kernels or store another result format);
- a worker cannot see a dataset's registered files at the path the ledger records;
- a worker's memory limit is below the run's **estimated** peak memory
  (:func:`estimate_peak`) on the dataset's public size, so the worker would be killed
  mid-run.

The probe sent to the cluster is compiled here from source, so it is shipped by value and
runs on a node where ``dpcore`` is not importable: such a node is reported by name, not
lost in a failed run.

The memory check never reads a private size (docs/PRIVACY.md §15, "What the memory check
reveals"): the number of rows of a private dataset is private, and a yes/no computed from it
would answer "N > threshold?" to whoever chooses the workers' limits. The estimate uses a
**public size**: the owner's declared row bound (:attr:`DatasetRecord.row_bound
<dpcore.privacy.ledger.DatasetRecord.row_bound>`, declared with
:meth:`Ledger.declare_row_bound <dpcore.privacy.ledger.Ledger.declare_row_bound>`), or, on
public-demo data, the true size (public there). The bytes per row come from the schema's
column counts and the arrays' types (:func:`bytes_per_row`), public too. A private dataset
without a declared bound is not checked for memory: the report lists it in ``unchecked``
(the run may still be killed for memory, as before this check existed). Every figure in a
refusal is thus public and shown to every requester.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dpcore.errors import ParameterError
from dpcore.privacy.roles import can_see_true_statistics

__all__ = ["FIXED_BYTES", "PEAK_FACTOR", "PreflightError", "Footprint", "NodeReport",
           "ClusterReport", "client_identity", "bytes_per_row", "true_size", "data_footprint",
           "estimate_peak", "check_cluster"]

#: Memory of a worker process before it holds any data: Python, NumPy, numba with the
#: kernels loaded, Dask (measured 215–278 MB in one process with the kernels warmed and
#: ``distributed`` imported; bench/scaling.py fits 275–484 MB per miner). Bytes.
FIXED_BYTES = 512 * 2**20
#: A run's peak, less the fixed memory, over the bytes of its loaded data
#: (:func:`data_footprint`). Measured on the worker's path (registered files → arrays →
#: content digest → ``prepare`` → MCMCTreePair's ``mine``) on CMS-shaped data (604 columns,
#: 10,000 and 40,000 rows, 2026-11-28): 2.5–2.7× when the columnar cache beside the files is
#: current, 4.2–4.5× when it is not and the CSV is parsed (a worker whose copy of the files
#: has no cache). 4.5 covers both. Sequences and labelled tables were not measured: the
#: same factor is applied to their loaded arrays. An estimate, not a bound. Measured before
#: two-view data moved to columnar partitions (``dpcore.data.partitions``), whose ``mine``
#: peak is lower (docs/SCALING.md): for them the factor over-estimates, the safe side;
#: re-measure on the partition path before lowering it.
PEAK_FACTOR = 4.5

_MIB = 2**20


class PreflightError(ParameterError):
    """The cluster cannot mine the plan; the message names the node and the problem.
    Nothing was charged."""


@dataclass(frozen=True)
class Footprint:
    """A run's estimated memory on one dataset, from a public size only.

    Attributes
    ----------
    dataset : str
    rows : int or None
        The public size the estimate uses — the owner's declared row bound (items for
        sequences), or the true size of public-demo data — or None: no public size (a
        private dataset without a declared bound), no estimate.
    columns : int
        Values per row (public: from the schema).
    data_bytes, peak_bytes : int or None
        ``rows`` × :func:`bytes_per_row`, and :func:`estimate_peak` of it for one run;
        None without a public size.
    basis : str
        ``"declared bound"``, ``"public demo"`` or ``""`` (none).
    """

    dataset: str
    rows: int | None
    columns: int
    data_bytes: int | None
    peak_bytes: int | None
    basis: str = ""


def bytes_per_row(data) -> tuple[int, int]:
    """``(bytes, values)`` per row of a loaded dataset of any kind, public.

    Both follow from the schema (columns per view, numeric and categorical features) and
    the arrays' types, never from the number of rows: two-view data hold every attribute as
    float64 plus an id; other kinds count each array's bytes per element of its first axis
    (a labelled table's per-feature clip counts are counted as if per row, and a sequence
    dataset's record boundaries as if every item started a record: both over-estimate).
    """
    views = getattr(data, "views", None)
    if views is not None:
        columns = sum(int(v.values.shape[0]) for v in views)
        size = sum(int(v.values.shape[0]) * v.values.itemsize for v in views)
        return size + np.asarray(data.ids).itemsize, columns
    size = columns = 0
    for _, array in data.content_arrays():
        array = np.asarray(array)
        width = int(np.prod(array.shape[1:], dtype=np.int64)) if array.ndim > 1 else 1
        size += width * array.itemsize
        columns += width
    return size, columns


def true_size(data) -> int:
    """The size a row bound counts: rows (two-view, labelled table) or items (sequences).
    Private unless public demo: for the owner's check of a bound and public-demo data only."""
    if getattr(data, "views", None) is not None:
        return int(data.n_rows)
    if hasattr(data, "indptr"):                # sequences: the bound counts items
        return int(np.asarray(data.items).size)
    return int(data.n_rows) if hasattr(data, "n_rows") else int(data.n_records)


def data_footprint(name: str, data, *, row_bound: int | None = None,
                   public_demo: bool = False) -> Footprint:
    """A run's estimated memory on a loaded dataset, from its public size.

    Parameters
    ----------
    name : str
        The dataset's registered name (for messages).
    data : TwoViewDataset, SequenceDataset or SynthesisTable
        As :func:`dpcore.runs.load_registered` returns it; only its public shape is used.
    row_bound : int, optional
        The owner's declared bound (``DatasetRecord.row_bound``).
    public_demo : bool
        Public-demo data: without a bound, the true size (public) is used.
    """
    per_row, columns = bytes_per_row(data)
    if row_bound is not None:
        rows, basis = int(row_bound), "declared bound"
    elif public_demo:
        rows, basis = true_size(data), "public demo"
    else:
        return Footprint(name, None, columns, None, None)
    data_bytes = rows * per_row
    return Footprint(name, rows, columns, data_bytes, estimate_peak(data_bytes), basis)


def estimate_peak(data_bytes: int, runs_at_once: int = 1) -> int:
    """Estimated peak memory of a worker mining ``runs_at_once`` runs on ``data_bytes`` of
    loaded data: ``FIXED_BYTES + runs_at_once × PEAK_FACTOR × data_bytes`` (bytes).

    Conservative for several threads (each thread's run is counted with its own copy of the
    data, though a worker shares one).
    """
    return int(FIXED_BYTES + max(1, runs_at_once) * PEAK_FACTOR * data_bytes)


# The probe is compiled from this text into a module of its own that is never imported, so
# cloudpickle ships it by value: it runs on a node where dpcore cannot be imported.
_PROBE_SOURCE = '''
def probe(paths):
    import os
    import sys
    out = {"pid": os.getpid(), "python": sys.version.split()[0],
           "missing": [p for p in paths if not os.path.exists(p)]}
    try:
        import dpcore
        out["version"] = dpcore.__version__
        out["digest"] = dpcore.source_digest()
    except BaseException as exc:  # any import failure is the report, not a crash
        out["error"] = type(exc).__name__ + ": " + str(exc)
    try:
        import dask
        out["terminate"] = dask.config.get("distributed.worker.memory.terminate")
    except BaseException:
        out["terminate"] = None
    return out
'''


def _probe():
    namespace = {"__name__": "dpcore_preflight_probe"}
    exec(compile(_PROBE_SOURCE, "<dpcore preflight probe>", "exec"), namespace)  # noqa: S102
    return namespace["probe"]


def client_identity() -> tuple[str, str]:
    """``(dpcore.__version__, dpcore.source_digest())`` of this process (the client)."""
    import dpcore

    return dpcore.__version__, dpcore.source_digest()


@dataclass(frozen=True)
class NodeReport:
    """What one node answered.

    Attributes
    ----------
    address : str
    role : {"scheduler", "worker"}
    version, digest : str or None
        Its dpcore version and source digest; None when dpcore could not be imported.
    error : str or None
        Why dpcore could not be imported.
    memory_limit : int
        The worker's memory limit in bytes (0: none set; always 0 for the scheduler).
    usable_bytes : int
        What a run may use before the worker's nanny kills it: the limit times Dask's
        ``distributed.worker.memory.terminate`` fraction (0 when no limit).
    nthreads : int
    missing : tuple of str
        Registered data paths the node cannot see (owner-only: data locations).
    """

    address: str
    role: str
    version: str | None
    digest: str | None
    error: str | None = None
    memory_limit: int = 0
    usable_bytes: int = 0
    nthreads: int = 0
    missing: tuple[str, ...] = ()


@dataclass
class ClusterReport:
    """The preflight's findings: the nodes, the client's identity, the datasets' footprints.

    Attributes
    ----------
    version, digest : str
        The client's.
    nodes : list of NodeReport
    footprints : list of Footprint
    problems : list of str
        One message per problem found (empty: the cluster can mine the plan).
    unchecked : list of str
        Datasets whose memory was not checked: private, without a declared row bound.
    threads : int
        Worker threads in the cluster (a batch's default wave size).
    """

    version: str
    digest: str
    nodes: list[NodeReport] = field(default_factory=list)
    footprints: list[Footprint] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)

    @property
    def threads(self) -> int:
        return sum(n.nthreads for n in self.nodes if n.role == "worker")


def _gb(value: int) -> str:
    return f"{value / 2**30:.2f} GB" if value >= 2**30 else f"{value / _MIB:.0f} MB"


def check_cluster(client, planned, *, footprints: dict | None = None,
                  raise_on_problem: bool = True) -> ClusterReport:
    """Check that the cluster behind ``client`` can mine ``planned`` (nothing is charged).

    Parameters
    ----------
    client : distributed.Client
    planned : list of PlannedRun
        The runs that will be dispatched (runs already stored need no cluster).
    footprints : dict of str → Footprint, optional
        Per dataset name; default: each run's ``footprint`` as
        :func:`dpcore.distributed.plan.check_plan` measured it on the client.
    raise_on_problem : bool
        Raise :class:`PreflightError` with every problem found (default), else return the
        report with its ``problems``.

    Raises
    ------
    PreflightError
        No worker; a node that cannot import dpcore or runs another version of it; a worker
        that cannot see a dataset's files; a worker whose memory limit is below a run's
        estimated peak (from the dataset's public size). The message names the node and,
        for memory, the dataset, the public size, the limit and the estimate.
    """
    version, digest = client_identity()
    report = ClusterReport(version=version, digest=digest)
    footprints = dict(footprints or {})
    records = {}
    audiences = {}
    for run in planned:
        record = run.permit.dataset
        records[record.name] = record
        audiences[record.name] = audiences.get(record.name, True) and can_see_true_statistics(
            run.permit.requester.role, record.public_demo)
        if record.name not in footprints and getattr(run, "footprint", None) is not None:
            footprints[record.name] = run.footprint
    report.footprints = [footprints[n] for n in sorted(footprints)]
    paths = sorted({r.source_path for r in records.values() if r.source_path})
    probe = _probe()
    info = client.scheduler_info(n_workers=-1)  # every worker, not the first five
    workers = info.get("workers", {})
    try:
        scheduler_answer = client.run_on_scheduler(probe, [])
    except Exception as exc:  # noqa: BLE001 - the scheduler failing the probe is the finding
        scheduler_answer = {"error": f"{type(exc).__name__}: {exc}", "missing": []}
    report.nodes.append(_node(info.get("address", "scheduler"), "scheduler", scheduler_answer,
                              {}))
    answers = {}
    if workers:
        try:
            answers = client.run(probe, paths, on_error="return")
        except Exception as exc:  # noqa: BLE001
            answers = {a: {"error": f"{type(exc).__name__}: {exc}", "missing": []}
                       for a in workers}
    for address in sorted(workers):
        answer = answers.get(address)
        if isinstance(answer, BaseException) or answer is None:
            answer = {"error": f"the probe failed: {answer!r}", "missing": []}
        report.nodes.append(_node(address, "worker", answer, workers[address]))
    _judge(report, records, audiences, by_path={r.source_path: n for n, r in records.items()})
    if report.problems and raise_on_problem:
        raise PreflightError("the cluster cannot mine this plan: " + "; ".join(report.problems)
                             + ". Nothing was charged")
    return report


def _node(address: str, role: str, answer: dict, info: dict) -> NodeReport:
    limit = int(info.get("memory_limit") or 0)
    terminate = answer.get("terminate")
    fraction = float(terminate) if isinstance(terminate, int | float) and terminate else 1.0
    return NodeReport(address=address, role=role, version=answer.get("version"),
                      digest=answer.get("digest"), error=answer.get("error"),
                      memory_limit=limit, usable_bytes=int(limit * min(fraction, 1.0)),
                      nthreads=int(info.get("nthreads") or 0),
                      missing=tuple(answer.get("missing") or ()))


def _judge(report: ClusterReport, records: dict, audiences: dict, by_path: dict) -> None:
    problems = report.problems
    if not any(n.role == "worker" for n in report.nodes):
        problems.append("the scheduler has no worker")
    for node in report.nodes:
        where = f"{node.role} {node.address}"
        if node.error is not None:
            problems.append(f"{where} cannot import dpcore ({node.error}); install this "
                            f"version on every node: pip install \".[distributed]\"")
            continue
        if node.version != report.version or node.digest != report.digest:
            problems.append(f"{where} runs dpcore {node.version} (source digest "
                            f"{node.digest}), this client {report.version} ({report.digest}); "
                            "install the client's version on every node")
        for path in node.missing:
            name = by_path.get(path, "?")
            shown = f" at {path}" if audiences.get(name) else ""
            problems.append(f"{where} cannot see the files of dataset {name!r}{shown} "
                            "(workers read the registered files from shared storage)")
    for fp in report.footprints:
        if fp.data_bytes is None:
            report.unchecked.append(fp.dataset)
            continue
        for node in report.nodes:
            if node.role != "worker" or node.memory_limit <= 0 or node.error is not None:
                continue
            need = estimate_peak(fp.data_bytes, node.nthreads)
            if need <= node.usable_bytes:
                continue
            # Every figure here is public (a declared bound or public-demo data, the
            # schema's columns, the operator's limits): shown to every requester.
            problems.append(
                f"worker {node.address} has a memory limit of {_gb(node.memory_limit)} "
                f"(a run is killed above {_gb(node.usable_bytes)}); dataset "
                f"{fp.dataset!r} ({fp.basis}: {fp.rows:,} rows × {fp.columns:,} columns, "
                f"{_gb(fp.data_bytes)} loaded) needs ≈ {_gb(need)} for "
                f"{max(1, node.nthreads)} run(s) at once (estimate: {_gb(FIXED_BYTES)} + "
                f"{PEAK_FACTOR:g} × the loaded data per run)")
