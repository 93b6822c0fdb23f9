"""Which Dask cluster runs the work: an existing one, or a ``LocalCluster`` started here.

The scheduler address comes from ``--scheduler`` (``tcp://host:8786``), else from the
``DPRM_SCHEDULER`` environment variable, else none: then :func:`open_client` starts a
``LocalCluster`` of separate worker *processes* (one thread each: the miners are numba
kernels that hold the core they run on) and stops it when the block ends.

Workers of an existing cluster must run this dpcore (same version, so the same kernels and
result formats) and, for batch mining, see the registered datasets' files at the paths the
ledger records (shared storage); :mod:`dpcore.distributed.preflight` checks both before a
batch charges anything. They never need the ledger: see :mod:`dpcore.distributed.batch`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

from dpcore.errors import ParameterError

__all__ = ["ENV_VAR", "LOCAL", "scheduler_address", "open_client"]

#: Environment variable naming an existing scheduler (``tcp://host:8786``).
ENV_VAR = "DPRM_SCHEDULER"
#: ``--scheduler local``: start a LocalCluster even when ``DPRM_SCHEDULER`` is set.
LOCAL = "local"

_ADDRESS = re.compile(r"^(tcp|tls|inproc|ucx)://[^\s/:]+(:\d{1,5})?/?$")


def scheduler_address(given: str | None = None, *, use_env: bool = True) -> str | None:
    """The scheduler to connect to, or None for a LocalCluster.

    Parameters
    ----------
    given : str, optional
        ``--scheduler``: ``tcp://host:port`` (also ``tls://``), or ``local``.
    use_env : bool
        Fall back on ``$DPRM_SCHEDULER`` when ``given`` is None.

    Raises
    ------
    ParameterError
        An address that is not ``protocol://host[:port]`` (nothing is connected to).
    """
    source = "--scheduler"
    if given is None and use_env:
        given = os.environ.get(ENV_VAR) or None
        source = f"${ENV_VAR}"
    if given is None:
        return None
    given = given.strip()
    if given.lower() == LOCAL:
        return None
    if not _ADDRESS.match(given):
        raise ParameterError(f"{source} {given!r}: expected a scheduler address such as "
                             "tcp://host:8786 (or 'local' for a LocalCluster)")
    return given


def _dask():
    try:
        import distributed
    except ImportError:
        raise ParameterError("runs on a Dask cluster need dask[distributed]: "
                             "pip install -r requirements.txt") from None
    return distributed


@contextmanager
def open_client(address: str | None = None, *, workers: int = 2,
                threads_per_worker: int = 1) -> Iterator:
    """A ``distributed.Client``: connected to ``address``, or to a new LocalCluster.

    Parameters
    ----------
    address : str, optional
        From :func:`scheduler_address`; None starts a ``LocalCluster`` of ``workers``
        separate worker processes (``threads_per_worker`` threads each, no dashboard),
        closed with the block.
    workers, threads_per_worker : int
        LocalCluster only (each ≥ 1).

    Raises
    ------
    ParameterError
        Bad worker counts, no Dask installed, or the scheduler cannot be reached.
    """
    for name, value in (("workers", workers), ("threads_per_worker", threads_per_worker)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ParameterError(f"{name} must be an integer ≥ 1; got {value!r}")
    distributed = _dask()
    if address is not None:
        try:
            client = distributed.Client(address, timeout="10s")
        except OSError as exc:
            raise ParameterError(f"cannot reach the Dask scheduler at {address} ({exc})"
                                 ) from None
        with client:
            yield client
        return
    # The scheduler serves HTTP even without a dashboard, on 8787 unless told otherwise (a
    # busy 8787 is a warning): loopback, port chosen by the system.
    # One trial thread per worker unless the user chose otherwise: the workers already
    # share the cores, and each miner would otherwise start its own pool of two.
    trial_threads = os.environ.get("DPRM_TRIAL_THREADS", "1")
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker,
                                  processes=True, dashboard_address="127.0.0.1:0",
                                  env={"DPRM_TRIAL_THREADS": trial_threads}) as cluster, \
            distributed.Client(cluster) as client:
        yield client
