"""dpcore.distributed.cluster: which scheduler a run connects to (``--scheduler``, then
``$DPRM_SCHEDULER``, else a LocalCluster), and bad addresses refused before connecting."""

from __future__ import annotations

import pytest

from dpcore.distributed.cluster import ENV_VAR, LOCAL, scheduler_address
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
