"""Which Dask cluster runs the work (dpcore.distributed.cluster): --scheduler, then
$DPRM_SCHEDULER, else a LocalCluster; a bad address or worker count is refused before
anything starts."""

import pytest

from dpcore.distributed.cluster import ENV_VAR, open_client, scheduler_address
from dpcore.errors import ParameterError


def test_the_flag_wins_over_the_environment_and_local_forces_a_local_cluster(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert scheduler_address(None) is None
    monkeypatch.setenv(ENV_VAR, "tcp://scheduler.example:8786")
    assert scheduler_address(None) == "tcp://scheduler.example:8786"
    assert scheduler_address(None, use_env=False) is None
    assert scheduler_address("tcp://10.0.0.2:9000") == "tcp://10.0.0.2:9000"
    assert scheduler_address("local") is None
    assert scheduler_address(" LOCAL ") is None


@pytest.mark.parametrize("bad", ["host:8786", "http://host:8786", "tcp://", "tcp://a b:1", ""])
def test_a_bad_address_is_named(bad, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(ParameterError, match="--scheduler"):
        scheduler_address(bad)
    monkeypatch.setenv(ENV_VAR, bad or "x")
    with pytest.raises(ParameterError, match=f"\\${ENV_VAR}"):
        scheduler_address(None)


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
