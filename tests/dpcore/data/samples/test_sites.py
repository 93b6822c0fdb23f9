"""The ``sites`` sample (dpcore/data/samples/sites.py): a seeded generator whose output is the
shipped folder, its planted rules, and its registration by the app's bootstrap."""

from __future__ import annotations

import filecmp

from dpcore.data.kinds import sample_data_dir
from dpcore.data.loading import load_dataset
from dpcore.data.samples.sites import SITES_ROWS, SITES_RULES
from dpcore.data.samples.sites import main as write_sites_main
from dpcore.privacy.ledger import Ledger
from dpcore.redescriptions.custom_query import parse_pair
from dpcore.redescriptions.evaluate import serenade_query_mask

SITES = sample_data_dir() / "sites"


def test_the_sites_sample_is_reproducible_and_its_rules_hold(tmp_path):
    write_sites_main(["--write", str(tmp_path)])
    files = ["traits.csv", "climate.csv", "schema.json", "README.md"]
    match, mismatch, errors = filecmp.cmpfiles(SITES, tmp_path / "sites", files, shallow=False)
    assert match == files, (mismatch, errors)
    sites = load_dataset(SITES)
    assert sites.n_rows == SITES_ROWS == 1200 and sites.schema.public_demo is True
    assert sites.schema.location.n_cells == 160
    for left, right in SITES_RULES:
        ml, mr = (serenade_query_mask(sites, q) for q in parse_pair(sites.schema, left, right))
        assert (ml & mr).sum() / (ml | mr).sum() > 0.6


def test_the_app_bootstrap_registers_the_sites_sample(tmp_path):
    from components.common.bootstrap import register_sample_datasets

    led = Ledger(tmp_path / "boot.sqlite")
    report = register_sample_datasets(led)
    assert "sites" in report.registered and not report.problems
    record = led._dataset_record("sites")
    assert record.schema.location is not None and record.confirmed
