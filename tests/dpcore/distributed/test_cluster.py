"""dpcore.distributed.cluster: which scheduler a run connects to (``--scheduler``, then
``$DPRM_SCHEDULER``, else a LocalCluster), and bad addresses refused before connecting."""

from __future__ import annotations

import pytest

from dpcore.distributed.cluster import ENV_VAR, LOCAL, open_client, scheduler_address
from dpcore.errors import ParameterError


def test_given_beats_the_environment(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "tcp://env-host:8786")
    assert scheduler_address("tcp://cli-host:8786") == "tcp://cli-host:8786"
    assert scheduler_address() == "tcp://env-host:8786"
    assert scheduler_address(use_env=False) is None


def test_no_address_or_local_means_a_local_cluster(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert scheduler_address() is None
    assert scheduler_address(LOCAL) is None and scheduler_address(" Local ") is None
    monkeypatch.setenv(ENV_VAR, "")
    assert scheduler_address() is None


@pytest.mark.parametrize("address", ["tcp://10.0.0.5:8786", "tls://sched.example:8786",
                                     "tcp://host"])
def test_addresses_with_a_protocol_are_accepted(address):
    assert scheduler_address(f"  {address} ") == address


@pytest.mark.parametrize("bad", ["host:8786", "http//x", "tcp://"])
def test_bad_addresses_name_where_they_came_from(bad, monkeypatch):
    with pytest.raises(ParameterError, match="--scheduler"):
        scheduler_address(bad)
    monkeypatch.setenv(ENV_VAR, bad)
    with pytest.raises(ParameterError, match=ENV_VAR):
        scheduler_address()


@pytest.mark.parametrize("bad", ["tcp://a b:1", "", "http://host:8786"])
def test_more_bad_addresses(bad, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(ParameterError, match="--scheduler"):
        scheduler_address(bad)


@pytest.mark.parametrize("workers, threads", [(0, 1), (2, 0), (True, 1), (1.5, 1)])
def test_bad_worker_counts_start_nothing(workers, threads):
    with pytest.raises(ParameterError, match="must be an integer"):
        with open_client(None, workers=workers, threads_per_worker=threads):
            pass


@pytest.mark.slow
def test_an_unreachable_scheduler_is_a_clear_error():
    """Refused after the connection timeout (10 s)."""
    with pytest.raises(ParameterError, match="cannot reach the Dask scheduler"):
        with open_client("tcp://127.0.0.1:9", workers=1):
            pass


def test_local_workers_run_one_trial_thread_unless_told_otherwise(monkeypatch):
    """Two worker processes share the cores: each miner in them runs its trials on one
    thread, unless DPRM_TRIAL_THREADS says otherwise."""
    import os

    monkeypatch.delenv("DPRM_TRIAL_THREADS", raising=False)
    with open_client(None, workers=1, threads_per_worker=1) as client:
        seen = client.run(lambda: os.environ.get("DPRM_TRIAL_THREADS"))
    assert list(seen.values()) == ["1"]
    monkeypatch.setenv("DPRM_TRIAL_THREADS", "2")
    with open_client(None, workers=1, threads_per_worker=1) as client:
        seen = client.run(lambda: os.environ.get("DPRM_TRIAL_THREADS"))
    assert list(seen.values()) == ["2"]
