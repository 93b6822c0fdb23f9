"""dpcore.synthesis.samples: the generated tables are seeded, match their schemas and the
published class balance, and the shipped sample folder loads back."""

from __future__ import annotations

import pandas as pd

from dpcore.data.table.table import load_synthesis_dataset, table_from_frame
from dpcore.synthesis.samples import (
    adult_like_schema,
    generate_adult_like,
    generate_pima_like,
    pima_like_schema,
    write_pima_like,
)


def test_pima_like_is_seeded_and_balanced_as_published():
    frame = generate_pima_like()
    pd.testing.assert_frame_equal(frame, generate_pima_like())
    schema = pima_like_schema()
    assert list(frame.columns) == [schema.label] + [f.name for f in schema.features]
    assert frame[schema.label].value_counts().to_dict() == {0: 500, 1: 268}
    table = table_from_frame(frame, schema)
    assert table.n_rows == 768 and sum(table.clipped.values()) == 0
    assert not generate_pima_like(seed=1).equals(frame)


def test_adult_like_matches_its_schema():
    schema = adult_like_schema()
    frame = generate_adult_like(2000, seed=3)
    assert len(frame) == 2000 and schema.width == 105 and schema.n_features == 14
    table = table_from_frame(frame, schema)
    assert table.n_rows == 2000 and set(table.labels.tolist()) <= set(range(schema.n_classes))


def test_the_written_sample_loads_back(tmp_path):
    folder = write_pima_like(tmp_path)
    table = load_synthesis_dataset(folder)
    assert table.schema == pima_like_schema() and table.n_rows == 768
    assert any(folder.glob("README*"))
