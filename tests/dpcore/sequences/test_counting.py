"""PFS2 and its baseline counted per partition: the same released values (same seed) from
the whole records, one partition and many, the records never loaded whole, and a partition
that fails after the charge leaving the run finishable."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpcore.data import partitions as store
from dpcore.data.sequences import partitions as sp
from dpcore.data.sequences.loading import load_registered_sequences
from dpcore.data.sequences.schema import load_sequence_schema
from dpcore.errors import DataError
from dpcore.registry import PFS2, PFS2_BASELINE
from dpcore.sequences import counting
from dpcore.sequences.candidates import build_candidate_trie, one_item_candidates
from dpcore.sequences.miner import mine_frequent_sequences
from dpcore.sequences.params import SequenceMiningParams
from dpcore.sequences.samples import generate_clickstream

N_RECORDS = 1500


def released(result) -> dict:
    """What a run releases (its stored JSON without the time stamp and the run id)."""
    raw = json.loads(json.dumps(result.to_dict()))
    for key in ("created_at", "run_id"):
        raw.pop(key, None)
    return raw


def write_records(folder, data) -> object:
    """``data`` as a record-per-line file with its schema (the registration format)."""
    folder.mkdir(parents=True, exist_ok=True)
    alphabet = list(data.schema.alphabet)
    lines = [" ".join(alphabet[i] for i in data.record(r)) for r in range(data.n_records)]
    (folder / "records.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    raw = {"kind": "sequences", "name": "clicks", "l1": int(data.schema.l1),
           "alphabet": alphabet, "files": {"format": "lines", "records": "records.txt"}}
    (folder / "sequence_schema.json").write_text(json.dumps(raw), encoding="utf-8")
    return load_sequence_schema(folder / "sequence_schema.json")


def partitioned(tmp_path, name, data, rows_per_partition, monkeypatch):
    folder = tmp_path / name
    schema = write_records(folder, data)
    with monkeypatch.context() as m:
        m.setattr(store, "ROWS_PER_PARTITION", rows_per_partition)
        loaded = sp.load_sequences_partitioned(folder, schema)
    assert isinstance(loaded, sp.PartitionedSequences)
    return folder, schema, loaded


@pytest.fixture(autouse=True)
def stream_every_partitioned_dataset(monkeypatch):
    """These tests count small datasets per partition, which only larger ones do by default."""
    monkeypatch.setattr(sp, "LOAD_WHOLE_UP_TO_RECORDS", 0)


@pytest.fixture(scope="module")
def clicks():
    return generate_clickstream(N_RECORDS, seed=7)


def _mine(data, params, seed=11, **kw):
    return mine_frequent_sequences(data, params, rng=np.random.default_rng(seed),
                                   run_id="r", seed=seed, **kw)


@pytest.mark.parametrize("algorithm,epsilon,theta", [(PFS2, 5.0, 0.05), (PFS2, 2.0, 0.02),
                                                     (PFS2_BASELINE, 2.0, 0.05)])
def test_one_partition_and_many_release_what_the_whole_records_release(
        tmp_path, monkeypatch, clicks, algorithm, epsilon, theta):
    params = SequenceMiningParams(algorithm=algorithm, epsilon=epsilon, theta=theta)
    _, schema, many = partitioned(tmp_path, "many", clicks, 97, monkeypatch)
    _, _, one = partitioned(tmp_path, "one", clicks, 10 ** 6, monkeypatch)
    assert len(many.manifest.partitions) == 16 and len(one.manifest.partitions) == 1
    whole = load_registered_sequences(tmp_path / "many", schema)
    assert not isinstance(whole, sp.PartitionedSequences)

    reference = _mine(whole, params)
    assert reference.patterns, "the data must give frequent sequences for this to test much"
    for data in (one, many):
        result = _mine(data, params)
        assert released(result) == released(reference)
        # the owner's diagnostics (true supports, shrinking) add up the same way
        assert result.diagnostics.true_supports == reference.diagnostics.true_supports
        assert result.diagnostics.shrinking == reference.diagnostics.shrinking
        assert data._whole is None, "a strict run loaded the records whole"
    # the paths counted: PFS2's shrunk verification; its shrunk pruning at ε 5 (seed 11)
    assert any(level.verify_length for level in reference.levels) == (algorithm == PFS2)
    if epsilon == 5.0:
        assert any(level.prune_epsilon_nano for level in reference.levels)


def test_counts_per_partition_add_up_to_the_whole_count(tmp_path, monkeypatch, clicks):
    _, _, many = partitioned(tmp_path, "many", clicks, 101, monkeypatch)
    whole = counting.WholeCounts(load_registered_sequences(tmp_path / "many", many.schema))
    parts = counting.record_counts(many)
    assert isinstance(parts, counting.PartitionCounts)
    np.testing.assert_array_equal(parts.length_histogram(9), whole.length_histogram(9))
    np.testing.assert_array_equal(parts.length_counts(5), whole.length_counts(5))
    mask = np.zeros(clicks.schema.n_items, dtype=np.bool_)
    mask[[0, 3, 5]] = True
    np.testing.assert_array_equal(parts.relevant_lengths(mask, 6),
                                  whole.relevant_lengths(mask, 6))
    trie = build_candidate_trie(one_item_candidates(range(clicks.schema.n_items)), 1)
    for bound in (0, 2):
        a, b = parts.supports(trie, bound), whole.supports(trie, bound)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
    shrunk, stats = parts.shrunk_supports(trie, 2)
    np.testing.assert_array_equal(shrunk, whole.shrunk_supports(trie, 2)[0])
    assert stats.long_records == int((clicks.lengths > 2).sum()) > 0
    # one record per partition count: a 1-item candidate's support is at most the records
    assert shrunk.max() <= clicks.n_records


def test_a_small_partitioned_dataset_is_loaded_once_and_counted_whole(
        tmp_path, monkeypatch, clicks):
    monkeypatch.setattr(sp, "LOAD_WHOLE_UP_TO_RECORDS", clicks.n_records)
    _, _, many = partitioned(tmp_path, "many", clicks, 97, monkeypatch)
    assert many._whole is not None                    # read whole when loaded
    assert isinstance(counting.record_counts(many), counting.WholeCounts)
    params = SequenceMiningParams(epsilon=2.0, theta=0.02)
    reference = _mine(load_registered_sequences(tmp_path / "many", many.schema), params)
    assert released(_mine(many, params)) == released(reference)
    monkeypatch.setattr(sp, "LOAD_WHOLE_UP_TO_RECORDS", clicks.n_records - 1)
    _, _, above = partitioned(tmp_path, "above", clicks, 97, monkeypatch)
    assert above._whole is None
    assert isinstance(counting.record_counts(above), counting.PartitionCounts)


def test_a_partition_damaged_after_loading_interrupts_the_count_not_the_release(
        tmp_path, monkeypatch, clicks):
    _, _, many = partitioned(tmp_path, "many", clicks, 97, monkeypatch)
    victim = many.manifest.folder / many.manifest.partitions[3]["file"]
    victim.write_bytes(victim.read_bytes()[:-7])
    with pytest.raises(counting.CountingInterrupted, match="stays charged"):
        _mine(many, SequenceMiningParams(epsilon=1.0, theta=0.05))
    victim.unlink()                  # a missing file: the OS error names its server path
    with pytest.raises(counting.CountingInterrupted, match="stays charged") as raised:
        _mine(many, SequenceMiningParams(epsilon=1.0, theta=0.05))
    assert str(tmp_path) not in str(raised.value)     # the requester sees no server path


def test_a_backend_needs_partitioned_records(clicks):
    with pytest.raises(DataError, match="partitions"):
        counting.record_counts(clicks, backend=object())


# ---------------------------------------------------------------------------
# On Dask: 2 worker processes, each reading its partitions from the shared store
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dask_client():
    from dpcore.distributed.cluster import open_client

    with open_client(None, workers=2, threads_per_worker=1) as client:
        yield client


@pytest.mark.slow
def test_dask_counts_release_what_the_in_process_counts_release(
        tmp_path, monkeypatch, clicks, dask_client):
    _, _, many = partitioned(tmp_path, "many", clicks, 97, monkeypatch)
    params = SequenceMiningParams(epsilon=5.0, theta=0.05)
    in_process = _mine(many, params)
    on_dask = _mine(many.with_backend(counting.DaskCounting(dask_client)), params)
    assert released(on_dask) == released(in_process)
    assert on_dask.diagnostics.true_supports == in_process.diagnostics.true_supports
    assert many._whole is None


def _demo_folder(tmp_path, monkeypatch, clicks):
    folder = tmp_path / "demo"
    write_records(folder, clicks)
    raw = json.loads((folder / "sequence_schema.json").read_text(encoding="utf-8"))
    raw["public_demo"] = True
    (folder / "sequence_schema.json").write_text(json.dumps(raw), encoding="utf-8")
    monkeypatch.setattr(store, "ROWS_PER_PARTITION", 97)
    return folder


@pytest.mark.slow
def test_a_count_lost_on_the_cluster_keeps_the_one_charge_and_the_finish_releases(
        tmp_path, monkeypatch, clicks, dask_client):
    from dpcore.privacy.ledger import Ledger
    from dpcore.privacy.policy import Requester
    from dpcore.privacy.registration import register_folder
    from dpcore.runs import charge_and_mine, finish_charged_run, load_registered

    folder = _demo_folder(tmp_path, monkeypatch, clicks)
    params = SequenceMiningParams(epsilon=1.0, theta=0.05)
    reference_ledger = Ledger(tmp_path / "reference.sqlite")
    _, record = register_folder(reference_ledger, folder, cap=10.0)
    reference = charge_and_mine(reference_ledger, record.name, params, seed=5, run_id="run-1")

    ledger = Ledger(tmp_path / "ledger.sqlite")
    _, record = register_folder(ledger, folder, cap=10.0)
    data = load_registered(record)
    assert isinstance(data, sp.PartitionedSequences)
    on_dask = data.with_backend(counting.DaskCounting(dask_client))
    # a partition vanishes from the shared store after the run's checks: the workers'
    # reads fail mid-run, after the charge
    victim = data.manifest.folder / data.manifest.partitions[5]["file"]
    hidden = victim.with_suffix(".hidden")
    victim.rename(hidden)
    with pytest.raises(counting.CountingInterrupted, match="stays charged"):
        charge_and_mine(ledger, record.name, params, seed=5, run_id="run-1", data=on_dask)
    run = ledger.get_run("run-1")
    assert run.status == "charged" and not ledger.has_result("run-1")
    assert ledger.budget(record.name).spent_nano == 10 ** 9     # charged once, kept

    hidden.rename(victim)
    finished = finish_charged_run(ledger, "run-1", Requester(), data=on_dask)
    assert ledger.get_run("run-1").status == "done"
    assert released(finished) == released(reference)
    # one charge for the one release: what the uninterrupted run kept, after its refund
    assert ledger.budget(record.name).spent_nano == \
        reference_ledger.budget(record.name).spent_nano
