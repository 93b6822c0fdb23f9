"""dpcore.sequences.samples: the synthetic sequence samples are seeded, stay inside their
alphabets and shapes, and written samples load back."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.data.sequences.loading import load_sequence_dataset
from dpcore.errors import ParameterError
from dpcore.sequences.samples import (
    EQUAL_WIDTH,
    MSNBC_CATEGORIES,
    QUANTILE,
    generate_clickstream,
    generate_house_power,
    generate_power_runs,
    generate_word_stream,
    write_sample,
)


def test_clickstream_is_seeded_and_uses_the_msnbc_categories():
    a = generate_clickstream(500, seed=3)
    b = generate_clickstream(500, seed=3)
    assert np.array_equal(a.items, b.items) and np.array_equal(a.indptr, b.indptr)
    assert a.schema.alphabet == MSNBC_CATEGORIES and a.n_records == 500
    assert a.lengths.min() >= 1
    assert not np.array_equal(generate_clickstream(500, seed=4).items[:200], a.items[:200])


def test_house_power_windows_have_the_declared_length():
    data = generate_house_power(40, seed=1, window=50)
    assert data.n_records == 40 and (data.lengths == 50).all()
    assert data.schema.n_items == 21 and data.schema.public_demo


def test_power_runs_have_long_constant_runs_in_equal_width_levels():
    data = generate_power_runs(3000, seed=4, binning=EQUAL_WIDTH)
    assert data.n_records == 3000 and (data.lengths == 50).all()
    levels = data.items.reshape(3000, 50)
    assert np.array_equal(levels, generate_power_runs(3000, seed=4).items.reshape(3000, 50))
    shares = np.bincount(levels.ravel(), minlength=21) / levels.size
    # the quiet regimes fall in the lowest level: about half the readings, and a third or
    # more of the windows are one constant run of it (frequent sequences of 50 items)
    assert 0.4 < shares[0] < 0.7 and shares[-1] < 0.01
    constant = (levels == levels[:, :1]).all(axis=1)
    assert 0.25 < constant.mean() < 0.6 and (levels[constant, 0] == 0).mean() > 0.9


def test_power_runs_in_quantile_levels_fill_every_level_and_keep_runs():
    levels = generate_power_runs(3000, seed=4, binning=QUANTILE).items.reshape(3000, 50)
    shares = np.bincount(levels.ravel(), minlength=21) / levels.size
    assert np.allclose(shares, 1 / 21, atol=0.002)
    changes = (np.diff(levels, axis=1) != 0).sum(axis=1)
    # a reading stays in its level for minutes: far fewer changes than 49 per window
    assert 5 < changes.mean() < 25


def test_power_runs_name_a_bad_binning():
    with pytest.raises(ParameterError, match="binning must be one of"):
        generate_power_runs(10, binning="log")


def test_word_streams_follow_their_shape():
    data = generate_word_stream(2000, n_items=300, seed=5, mean_length=10.0, max_length=40)
    assert data.n_records == 2000 and data.lengths.max() <= 40
    assert 7.0 < data.lengths.mean() < 13.0
    counts = np.bincount(data.items, minlength=300)
    assert counts[:10].sum() > counts[-10:].sum()  # Zipf: the first words are common


def test_a_written_sample_loads_back(tmp_path):
    data = generate_clickstream(200, seed=9, public_demo=True)
    written = write_sample(data, tmp_path / "cs", title="Clicks")
    assert any(p.name.endswith(".json") for p in written)
    back = load_sequence_dataset(tmp_path / "cs")
    assert back.schema == data.schema and back.to_lists() == data.to_lists()
