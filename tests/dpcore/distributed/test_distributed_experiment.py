"""The experiment harness on a Dask LocalCluster (run_experiment(scheduler=...),
``python -m dpcore experiment --scheduler``): a grid with a worker killed mid-way loses no
trial and records none twice — its released runs equal the in-process grid's, seed for
seed."""

import json
import os
import signal

import pytest

from dpcore import cli
from dpcore.data.samples import generate_clinic, write_dataset
from dpcore.distributed.cluster import open_client
from dpcore.experiments.harness import run_experiment
from tests.support.accounts_support import owner_in_env_ledger

pytestmark = pytest.mark.slow

GRID = dict(algorithms=["mcmctreepair", "altexpm"], epsilons=[1.0], runs=[4], prune="auto",
            seed=3, mc_iter=2000, reference_runs=0)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("clinic_2000")
    schema, left, right, _ = generate_clinic(n_rows=2000, seed=1)
    write_dataset(d, schema, left, right)
    return d


@pytest.fixture(scope="module")
def client():
    with open_client(None, workers=2, threads_per_worker=1) as c:
        yield c


def _runs(folder):
    """Every released run of a report folder, without its random run id and its time."""
    out = {}
    for path in sorted((folder / "runs").glob("*.json")):
        release = json.loads(path.read_text(encoding="utf-8"))
        release.pop("run_id")
        release.pop("created_at")
        out[path.name] = release
    return out


def test_a_grid_with_a_worker_killed_midway_equals_the_in_process_grid(data_dir, tmp_path,
                                                                       client):
    expected = run_experiment(data_dir, out_dir=tmp_path / "local", **GRID)
    killed: dict = {}

    def progress(done, total, message):
        if killed:
            return
        busy = {addr: keys for addr, keys in client.processing().items() if keys}
        assert busy, "no trial was running when the first one finished"
        address, keys = next(iter(busy.items()))
        pid = client.run(os.getpid, workers=[address])[address]
        os.kill(pid, signal.SIGKILL)
        killed.update(address=address, keys=list(keys), pid=pid)

    metrics = run_experiment(data_dir, out_dir=tmp_path / "dask", scheduler=client,
                             progress=progress, **GRID)
    assert killed["keys"], "the killed worker held trials"
    assert killed["address"] not in client.scheduler_info()["workers"]
    assert _runs(tmp_path / "dask") == _runs(tmp_path / "local")
    assert len(_runs(tmp_path / "dask")) == 8
    assert [c["summary"] for c in metrics["cells"]] == [c["summary"] for c in expected["cells"]]
    assert [c["run_files"] for c in metrics["cells"]] == [c["run_files"]
                                                          for c in expected["cells"]]


def test_the_command_line_runs_the_grid_on_a_scheduler(data_dir, tmp_path, client, monkeypatch):

    monkeypatch.setenv("DPRM_LEDGER", str(tmp_path / "login-only.sqlite"))
    owner_in_env_ledger("s3cret")
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    address = client.scheduler.address
    args = ["experiment", "--data", str(data_dir), "--algorithms", "altexpm", "--epsilons", "1",
            "--runs", "2", "--reference-runs", "0", "--mc-iter", "500", "--out"]
    assert cli.main(args + [str(tmp_path / "a"), "--scheduler", address]) == 0
    assert cli.main(args + [str(tmp_path / "b")]) == 0
    assert _runs(tmp_path / "a") == _runs(tmp_path / "b") and len(_runs(tmp_path / "a")) == 2
    assert cli.main(args + [str(tmp_path / "c"), "--scheduler", "not-an-address"]) == 2
