"""dpcore.data.samples.write: sample folders load back as written (shuffled right rows
included), and the command line writes both samples."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpcore.data.loading import load_dataset
from dpcore.data.samples import write
from dpcore.data.samples.clinic import generate_clinic
from dpcore.data.samples.write import main, write_dataset


def test_a_written_dataset_loads_back_row_for_row(tmp_path):
    schema, left, right, _ = generate_clinic(n_rows=300, seed=11)
    written = write_dataset(tmp_path / "c", schema, left, right, shuffle_right_seed=3)
    assert {p.name for p in written} >= {"schema.json"} | {v.file for v in schema.views}
    assert json.loads((tmp_path / "c" / "schema.json").read_text())["name"] == schema.name
    data = load_dataset(tmp_path / "c")
    assert data.n_rows == 300
    bnp = [a.name for a in data.views[1].attributes].index("LAB_BNP")
    by_id = dict(zip(right["patient_id"].astype(str), right["LAB_BNP"], strict=True))
    expected = np.array([by_id[str(i)] for i in data.ids])
    assert np.allclose(data.views[1].values[bnp], expected, equal_nan=True)


def test_main_needs_a_folder_and_writes_both_samples(tmp_path, capsys, monkeypatch):
    with pytest.raises(SystemExit):
        main([])
    monkeypatch.setattr(write, "write_samples",
                        lambda root, clinic_seed, cms_seed: [tmp_path / f"{clinic_seed}",
                                                             tmp_path / f"{cms_seed}"])
    assert main(["--write", str(tmp_path), "--clinic-seed", "1", "--cms-seed", "2"]) == 0
    assert capsys.readouterr().out.split() == [str(tmp_path / "1"), str(tmp_path / "2")]
