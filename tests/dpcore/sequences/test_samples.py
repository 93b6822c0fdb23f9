"""dpcore.sequences.samples: the synthetic sequence samples are seeded, stay inside their
alphabets and shapes, and written samples load back."""

from __future__ import annotations

import numpy as np

from dpcore.data.sequences.loading import load_sequence_dataset
from dpcore.sequences.samples import (
    MSNBC_CATEGORIES,
    generate_clickstream,
    generate_house_power,
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
