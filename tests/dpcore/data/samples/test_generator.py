"""Synthetic generators (dpcore.data.samples) and the shipped synthetic sample data."""

from __future__ import annotations

import filecmp

import numpy as np
import pandas as pd
import pytest

from dpcore.data.loading import load_dataset, sample_data_dir
from dpcore.data.samples import (
    PlantedRule,
    clinic_planted_rules,
    cms_like_planted_rules,
    generate_clinic,
    generate_cms_like,
    generate_cms_like_dataset,
    jaccard,
    main,
    rule_masks,
    rule_masks_dataset,
    true_jaccard,
    write_dataset,
)
from dpcore.data.schema import BOOLEAN, CATEGORICAL, LEFT, NUMERIC, RIGHT

CLINIC_RULES = clinic_planted_rules()
CMS_RULES = cms_like_planted_rules()


def test_clinic_is_deterministic_for_a_seed():
    a = generate_clinic(600, seed=7)
    b = generate_clinic(600, seed=7)
    c = generate_clinic(600, seed=8)
    assert a[0] == b[0]
    pd.testing.assert_frame_equal(a[1], b[1])
    pd.testing.assert_frame_equal(a[2], b[2])
    assert not a[2].equals(c[2])


def test_cms_like_is_deterministic_for_a_seed():
    a = generate_cms_like_dataset(500, 30, 12, seed=3)
    b = generate_cms_like_dataset(500, 30, 12, seed=3)
    c = generate_cms_like_dataset(500, 30, 12, seed=4)
    for v in (0, 1):
        np.testing.assert_array_equal(a.views[v].values, b.views[v].values)
    assert not np.array_equal(a.views[1].values, c.views[1].values)


@pytest.mark.parametrize("rule", CLINIC_RULES, ids=lambda r: r.name)
def test_clinic_planted_rule_true_jaccard_in_range(clinic_dataset, rule):
    """Computed from the shipped CSVs as loaded by load_dataset."""
    ml, mr = rule_masks_dataset(rule, clinic_dataset)
    j = jaccard(ml, mr)
    lo, hi = rule.jaccard_range
    assert 0.5 <= lo < hi <= 0.9
    assert lo <= j <= hi, f"{rule.text}: true J {j:.3f} not in [{lo}, {hi}]"
    assert (ml & mr).sum() >= 300  # several hundred rows at N = 5000
    assert true_jaccard(rule, clinic_dataset) == j


def test_clinic_rule_mix_and_grid_alignment(clinic_dataset):
    assert {r.left_op for r in CLINIC_RULES} == {"single", "and", "or"}
    schema = clinic_dataset.schema
    byname = {a.name: a for a in schema.attributes}
    for r in CLINIC_RULES:
        attr = byname[r.right_attr]
        assert r.threshold in schema.split_grid(attr), r  # exactly a public grid threshold
        assert all(byname[a].type == BOOLEAN for a in r.left_attrs)


def test_clinic_shape_and_marginals(clinic_dataset):
    s = clinic_dataset.schema
    assert s.public_demo and "generate_clinic" in s.provenance and "20231" in s.provenance
    left, right = s.view_attributes(LEFT), s.view_attributes(RIGHT)
    assert sum(a.type == BOOLEAN for a in left) == 40
    assert sum(a.type == CATEGORICAL for a in left) >= 1
    assert len(right) == 25 and all(a.type == NUMERIC and a.unit for a in right)
    dx = clinic_dataset.views[0].values[[a.type == BOOLEAN for a in left]]
    prevalence = dx.mean(axis=1)
    assert prevalence.min() > 0.03 and prevalence.max() < 0.42
    missing = np.isnan(clinic_dataset.views[1].values).mean()
    assert 0.01 < missing < 0.035


def test_shipped_sample_data_is_reproducible(tmp_path):
    main(["--write", str(tmp_path)])
    for name, files in (("clinic", ["diagnoses.csv", "labs.csv", "schema.json", "README.md"]),
                        ("cms_small", ["cms_small.csv", "schema.json", "README.md"])):
        match, mismatch, errors = filecmp.cmpfiles(sample_data_dir() / name, tmp_path / name,
                                                   files, shallow=False)
        assert match == files, (name, mismatch, errors)


def test_sample_data_is_small():
    # Six samples in three families; the largest is clickstream (50,000 visits, ~1.9 MB),
    # sized so PFS2's supports at the paper's θ stand above the noise at ε = 1.
    # The owner-side partitions that registering a sample writes beside it
    # (dpcore.data.partitions, git-ignored) are not sample data; nor are the caches
    # earlier versions wrote there.
    from dpcore.data.partitions import PARTS_FOLDER

    total = sum(p.stat().st_size for p in sample_data_dir().rglob("*")
                if p.is_file() and PARTS_FOLDER not in p.parts and ".dpcore_cache" not in p.parts)
    assert total < 5_000_000


@pytest.mark.parametrize("rule", CMS_RULES, ids=lambda r: r.name)
def test_cms_small_planted_rules(rule):
    ds = load_dataset(sample_data_dir() / "cms_small")
    assert ds.views[0].n_attributes == 60 and ds.views[1].n_attributes == 20
    lo, hi = rule.jaccard_range
    assert lo <= true_jaccard(rule, ds) <= hi
    attr = next(a for a in ds.schema.attributes if a.name == rule.right_attr)
    assert rule.threshold in ds.schema.split_grid(attr)


def test_cms_like_shape_dtypes_and_consistency():
    n = 3000
    ds = generate_cms_like_dataset(n, seed=11)
    assert ds.views[0].values.shape == (452, n) and ds.views[1].values.shape == (152, n)
    assert all(v.values.dtype == np.float64 and v.values.flags.c_contiguous for v in ds.views)
    assert {a.type for a in ds.views[0].attributes} == {BOOLEAN}
    assert {a.type for a in ds.views[1].attributes} == {NUMERIC}
    assert set(np.unique(ds.views[0].values)) == {0.0, 1.0}
    amounts = ds.views[1].values
    assert amounts.min() == 0 and np.all(amounts % 10 == 0) and not np.isnan(amounts).any()
    assert (amounts == 0).mean() > 0.2  # many zero payments, as in DE-SynPUF
    schema, left, right, rules = generate_cms_like(n, seed=11)
    assert left.shape == (n, 453) and right.shape == (n, 153)
    assert left.dtypes.iloc[1] == np.uint8 and right.dtypes.iloc[1] == np.float32
    np.testing.assert_array_equal(left.iloc[:, 1:].to_numpy(float).T, ds.views[0].values)
    np.testing.assert_array_equal(right.iloc[:, 1:].to_numpy(float).T, ds.views[1].values)
    assert rules == CMS_RULES and schema == ds.schema


def test_cms_like_rules_at_larger_size():
    ds = generate_cms_like_dataset(20_000, n_bool=100, n_numeric=30, seed=5)
    for r in CMS_RULES:
        lo, hi = r.jaccard_range
        assert lo <= true_jaccard(r, ds) <= hi, r.text


def test_write_dataset_round_trip(tmp_path):
    schema, left, right, rules = generate_clinic(400, seed=99)
    write_dataset(tmp_path / "c", schema, left, right, shuffle_right_seed=1)
    ds = load_dataset(tmp_path / "c")
    assert list(ds.ids) == list(left.patient_id)
    lab = right.drop(columns="patient_id").to_numpy(float).T
    np.testing.assert_allclose(ds.views[1].values, lab, rtol=1e-12)
    for r in rules:
        assert true_jaccard(r, ds) == true_jaccard(r, left, right)
    # one file for both views
    schema, left, right, _ = generate_cms_like(300, 10, 5, seed=2)
    write_dataset(tmp_path / "m", schema, left, right)
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["cms_like.csv", "schema.json"]
    ds = load_dataset(tmp_path / "m")
    np.testing.assert_allclose(ds.views[1].values, right.iloc[:, 1:].to_numpy(float).T)


def test_rule_masks_semantics():
    rule = PlantedRule("T", ("A", "B"), "and", "X", "<=", 5.0, (0.5, 0.9))
    left = {"A": np.array([1, 1, 0, 1]), "B": np.array([1, 0, 1, np.nan])}
    right = {"X": np.array([5.0, 6.0, 1.0, np.nan])}
    ml, mr = rule_masks(rule, left, right)
    assert ml.tolist() == [True, False, False, False]
    assert mr.tolist() == [True, False, True, False]  # missing satisfies nothing
    assert jaccard(ml, mr) == 0.5
    assert rule.left_text == "A ∧ B" and rule.right_text == "X ≤ 5"
    assert jaccard(np.zeros(3, bool), np.zeros(3, bool)) == 0.0
