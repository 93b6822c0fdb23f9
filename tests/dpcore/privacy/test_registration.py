"""dpcore.privacy.registration: the one registration path of the CLI's ``register``, the
Data page's upload and the API — all or nothing, schema confirmed, content digest recorded.
(The Data page's use of it is tested in ``tests/app/test_upload_kinds.py``.)"""

from __future__ import annotations

import pytest

from dpcore.data.kinds import load_any_dataset
from dpcore.data.sequences.schema import SequenceSchema
from dpcore.errors import DataError, ParameterError
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import content_digest
from dpcore.privacy.registration import check_cap, register_folder, register_upload
from dpcore.registry import KIND_SEQUENCES

RECORDS = b"a b c\nb c\na c d\nd\n"
ALPHABET = b"a\nb\nc\nd\n"


@pytest.mark.parametrize("cap", [0, -1.0, float("nan"), float("inf"), True, "1"])
def test_check_cap_refuses_what_is_not_a_positive_finite_number(cap):
    with pytest.raises(ParameterError, match="finite number > 0"):
        check_cap(cap)


def test_register_upload_stores_the_cli_layout_and_records_the_digest(tmp_path):
    ledger = Ledger(tmp_path / "l.sqlite")
    schema = SequenceSchema(name="s", alphabet=("a", "b", "c", "d"), l1=4,
                            files={"format": "lines", "records": "r.txt", "alphabet": "a.txt"})
    kind, record = register_upload(ledger, tmp_path / "up", "s",
                                   {"r.txt": RECORDS, "a.txt": ALPHABET}, schema, cap=1.5)
    folder = tmp_path / "up" / "s"
    assert kind == KIND_SEQUENCES and record.confirmed and ledger.budget("s").cap == 1.5
    assert sorted(p.name for p in folder.iterdir()) == [".dpcore_parts", "a.txt", "r.txt",
                                                        "sequence_schema.json"]
    assert record.content_digest == content_digest(load_any_dataset(folder)[1])
    from dpcore.data.sequences.loading import load_registered_sequences
    assert record.content_digest == content_digest(load_registered_sequences(folder, schema))


def test_a_table_folder_is_streamed_into_partitions_with_the_loaders_digest(tmp_path,
                                                                            monkeypatch):
    import shutil

    import dpcore.data.table.table as table_module
    from dpcore.data.loading import sample_data_dir
    from dpcore.data.partitions import PARTS_FOLDER
    from dpcore.data.table.table import load_synthesis_dataset
    from dpcore.runs import load_registered

    folder = tmp_path / "pima_like"
    shutil.copytree(sample_data_dir() / "pima_like", folder,
                    ignore=shutil.ignore_patterns(PARTS_FOLDER))
    expected = content_digest(load_synthesis_dataset(folder))
    ledger = Ledger(tmp_path / "l.sqlite")

    def refuse(*args, **kwargs):
        raise AssertionError("the whole-file loader was called")

    with monkeypatch.context() as m:
        m.setattr(table_module, "load_table", refuse)
        _, record = register_folder(ledger, folder, cap=1.0)
        data = load_registered(record)                  # the run's read: the partitions
    assert record.content_digest == expected == content_digest(data)
    assert (folder / PARTS_FOLDER).is_dir()


def test_a_bad_record_line_leaves_no_folder_and_no_row(tmp_path):
    ledger = Ledger(tmp_path / "l.sqlite")
    schema = SequenceSchema(name="s", alphabet=("a", "b"), l1=4,
                            files={"format": "lines", "records": "r.txt", "alphabet": "a.txt"})
    with pytest.raises(DataError, match="r.txt': line 2: item 'c' is not in the declared"):
        register_upload(ledger, tmp_path / "up", "s", {"r.txt": b"a\nc\n", "a.txt": b"a\nb\n"},
                        schema, cap=1)
    assert ledger._dataset_records() == []
    assert not (tmp_path / "up").exists() or list((tmp_path / "up").iterdir()) == []


def test_register_upload_refuses_a_taken_name_and_a_file_named_like_the_schema(ledger_path,
                                                                                tmp_path):
    ledger = Ledger(ledger_path)
    schema = SequenceSchema(name="s", alphabet=("a", "b", "c", "d"), l1=4,
                            files={"format": "lines", "records": "r.txt", "alphabet": "a.txt"})
    root = tmp_path / "up"
    register_upload(ledger, root, "s", {"r.txt": RECORDS, "a.txt": ALPHABET}, schema, cap=1)
    with pytest.raises(ParameterError, match="already exists"):
        register_upload(ledger, root, "s", {"r.txt": RECORDS, "a.txt": ALPHABET}, schema,
                        cap=1)
    other = SequenceSchema(name="t", alphabet=("a",), l1=4,
                           files={"format": "lines", "records": "sequence_schema.json"})
    with pytest.raises(DataError, match="may not be named"):
        register_upload(ledger, root, "t", {"sequence_schema.json": b"a\n"}, other, cap=1)
    assert sorted(p.name for p in root.iterdir()) == ["s"]
    assert [d.name for d in ledger._dataset_records()] == ["s"]

def test_register_folder_is_what_the_cli_register_does(ledger_path, tmp_path):
    from dpcore.data.loading import sample_data_dir

    ledger = Ledger(ledger_path)
    kind, record = register_folder(ledger, sample_data_dir() / "clickstream", cap=2.5,
                                   name="cs")
    assert kind == KIND_SEQUENCES and record.confirmed and ledger.budget("cs").cap == 2.5
    data = load_any_dataset(sample_data_dir() / "clickstream")[1]
    assert record.content_digest == content_digest(data)
    with pytest.raises(ParameterError):
        register_folder(ledger, sample_data_dir() / "clickstream", cap=float("inf"),
                        name="cs2")
    assert [d.name for d in ledger._dataset_records()] == ["cs"]


def test_check_name_free_refuses_a_registered_name_and_an_existing_folder(ledger_path,
                                                                          tmp_path):
    from dpcore.privacy.registration import check_name_free

    ledger = Ledger(ledger_path)
    root = tmp_path / "up"
    assert check_name_free(ledger, root, "s") == "s"
    schema = SequenceSchema(name="s", alphabet=("a", "b", "c", "d"), l1=4,
                            files={"format": "lines", "records": "r.txt", "alphabet": "a.txt"})
    register_upload(ledger, root, "s", {"r.txt": RECORDS, "a.txt": ALPHABET}, schema, cap=1)
    with pytest.raises(ParameterError, match="'s' already exists; choose another name"):
        check_name_free(ledger, root, "s")
    (root / "left").mkdir()
    with pytest.raises(ParameterError, match="already holds a folder named 'left'"):
        check_name_free(ledger, root, "left")
    with pytest.raises(ParameterError, match="must not contain '/'"):
        check_name_free(ledger, root, "../s")


def test_register_folder_streams_a_two_view_dataset_and_records_its_content_digest(
        tmp_path, monkeypatch):
    """Registration never calls the whole-file loader on good files (its partitions are
    streamed), and records the digest a run computes from the loaded data."""
    import shutil

    import dpcore.data.loading as loading
    from dpcore.data.loading import load_dataset, sample_data_dir
    from dpcore.data.partitions import PARTS_FOLDER
    from dpcore.runs import load_registered

    folder = tmp_path / "sites"
    shutil.copytree(sample_data_dir() / "sites", folder,
                    ignore=shutil.ignore_patterns(PARTS_FOLDER, ".dpcore_cache"))
    expected = content_digest(load_dataset(folder))
    ledger = Ledger(tmp_path / "l.sqlite")

    def refuse(*args, **kwargs):
        raise AssertionError("the whole-file loader was called")

    with monkeypatch.context() as m:
        m.setattr(loading, "load_dataset", refuse)
        _, record = register_folder(ledger, folder, cap=1.0)
        data = load_registered(record)                  # the run's read: the partitions
    assert record.content_digest == expected == content_digest(data)
    assert (folder / PARTS_FOLDER).is_dir()


def test_a_two_view_folder_with_a_bad_cell_registers_nothing_and_writes_no_partition(tmp_path):
    import shutil

    from dpcore.data.loading import sample_data_dir
    from dpcore.data.partitions import PARTS_FOLDER

    folder = tmp_path / "sites"
    shutil.copytree(sample_data_dir() / "sites", folder,
                    ignore=shutil.ignore_patterns(PARTS_FOLDER, ".dpcore_cache"))
    traits = folder / "traits.csv"
    lines = traits.read_text().splitlines()
    lines[4] = lines[4].replace(",", ",oops,", 1)
    traits.write_text("\n".join(lines) + "\n")
    ledger = Ledger(tmp_path / "l.sqlite")
    with pytest.raises(DataError, match="line 5"):
        register_folder(ledger, folder, cap=1.0)
    assert ledger.list_dataset_cards() == []
    assert not [p for p in (folder / PARTS_FOLDER).glob("*") if p.name != ".lock"] \
        if (folder / PARTS_FOLDER).exists() else True
