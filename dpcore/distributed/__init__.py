"""Runs on a Dask distributed cluster: batch mining from a plan file and the experiment
harness's trials.

- :mod:`dpcore.distributed.cluster` — which cluster: ``--scheduler tcp://host:8786``, the
  ``DPRM_SCHEDULER`` environment variable, else a ``LocalCluster`` of worker processes;
- :mod:`dpcore.distributed.plan` — a batch plan file (JSON or TOML), validated in full
  before anything is charged; entries without a run id get a deterministic one;
- :mod:`dpcore.distributed.preflight` — before any charge, the cluster's nodes run this
  dpcore, see the data and have the memory a run is estimated to need;
- :mod:`dpcore.distributed.batch` — charge every run in the ledger, a wave at a time,
  dispatch it to a worker, store its one result (retried under the same run id when a
  worker dies).

Dask (``dask[distributed]``) is imported only when a cluster is used.
"""
