"""Dataset kinds (dpcore.data.kinds): a folder's kind from its schema file, loading any kind."""

from __future__ import annotations

import pytest

from dpcore.data.kinds import (
    find_schema_file,
    kind_of_data,
    kind_of_schema,
    list_sample_folders,
    load_any_dataset,
    load_any_schema,
)
from dpcore.data.loading import list_sample_datasets, sample_data_dir
from dpcore.data.sequences.dataset import SequenceDataset
from dpcore.data.table.table import SynthesisTable
from dpcore.errors import DataError

ROOT = sample_data_dir()


def test_sample_folders_of_every_kind_are_found_and_the_two_view_list_is_unchanged():
    kinds = {folder.name: kind for kind, folder in list_sample_folders()}
    assert kinds["clickstream"] == kinds["house_power"] == "sequences"
    assert kinds["pima_like"] == "table"
    assert {kinds[p.name] for p in list_sample_datasets()} == {"two_view"}


@pytest.mark.parametrize("folder, kind, data_type", [
    ("house_power", "sequences", SequenceDataset),
    ("pima_like", "table", SynthesisTable),
])
def test_a_folder_or_its_schema_file_loads_as_its_kind(folder, kind, data_type):
    found, schema_file = find_schema_file(ROOT / folder)
    assert found == kind and find_schema_file(schema_file) == (kind, schema_file)
    loaded_kind, schema = load_any_schema(schema_file)
    assert loaded_kind == kind and kind_of_schema(schema) == kind
    loaded_kind, data = load_any_dataset(ROOT / folder)
    assert loaded_kind == kind and isinstance(data, data_type)
    assert kind_of_data(data) == kind and data.schema == schema


def test_a_folder_without_a_schema_file_names_what_was_looked_for(tmp_path):
    with pytest.raises(DataError, match="sequence_schema.json.*synthesis_schema.json"):
        find_schema_file(tmp_path)
    with pytest.raises(DataError, match="no such folder or file"):
        find_schema_file(tmp_path / "missing")
    with pytest.raises(DataError, match="SequenceSchema"):
        kind_of_schema({"name": "x"})
    with pytest.raises(DataError, match="TwoViewDataset"):
        kind_of_data([1, 2, 3])


def test_an_item_outside_the_declared_alphabet_names_file_and_line(tmp_path):
    import shutil

    shutil.copytree(ROOT / "clickstream", tmp_path / "clicks")
    (tmp_path / "clicks" / "records.txt").write_text("frontpage news\nfrontpage bogus\n",
                                                     encoding="utf-8")
    with pytest.raises(DataError, match="bogus") as info:
        load_any_dataset(tmp_path / "clicks")
    assert "records.txt" in str(info.value) and "2" in str(info.value)
