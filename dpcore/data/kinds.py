"""Dataset kinds: which kind a folder, a schema or a loaded dataset is, and loading any kind.

Three kinds (:data:`dpcore.registry.DATASET_KINDS`): a two-view table (``schema.json`` /
``schema.toml``, mined for redescriptions), a sequence dataset (``sequence_schema.json``,
frequent sequences) and a labelled table (``synthesis_schema.json``, synthetic data). Each
kind's public schema, private data type and loaders live in this layer (:mod:`dpcore.data.schema`
and :mod:`dpcore.data.dataset`; :mod:`dpcore.data.sequences`; :mod:`dpcore.data.table`), and its
:class:`dpcore.family.DatasetKind` object is defined here (:data:`KINDS`): the ledger and
registration below the run path read schemas and data through it without reaching a mining
family. The registry's :class:`~dpcore.registry.DatasetKindSpec` holds the names (label, schema
file names); a family names the kind object it mines as its ``kind``.

Nothing here is private by itself: the loaders return private data, which only a charged run
(:func:`dpcore.runs.charge_and_mine`) or the owner may read.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from dpcore.data.dataset import TwoViewDataset
from dpcore.errors import DataError, ParameterError
from dpcore.registry import (
    DATASET_KIND_SPECS,
    DATASET_KINDS,
    KIND_SEQUENCES,
    KIND_TABLE,
    KIND_TWO_VIEW,
)

__all__ = ["TwoViewKind", "SequenceKind", "TableKind", "KINDS", "kind_object",
           "load_two_view", "kind_of_schema", "kind_of_data", "schema_type_names",
           "schema_to_dict", "schema_from_dict", "find_schema_file", "load_any_schema",
           "load_any_dataset", "load_registered_data", "list_sample_folders"]


def load_two_view(source_path, schema) -> TwoViewDataset:
    """The two-view data at ``source_path`` read with the confirmed ``schema`` (from the
    owner-side partitions, :mod:`dpcore.data.partitions`: pandas only to build them)."""
    from dpcore.data.partitions import load_two_view_partitioned

    return load_two_view_partitioned(source_path, schema)


# The modules behind each kind are imported on first use: pandas and the loaders are not
# needed to read a stored schema's kind.

class _Kind:
    """Name, label and schema file names of a kind, from its registry spec."""

    key: str

    @property
    def label(self) -> str:
        return DATASET_KIND_SPECS[self.key].label

    @property
    def schema_files(self) -> tuple[str, ...]:
        return DATASET_KIND_SPECS[self.key].schema_files


class TwoViewKind(_Kind):
    """The two-view table: :class:`~dpcore.data.schema.Schema` and
    :class:`~dpcore.data.dataset.TwoViewDataset`, read from its partitions."""

    key = KIND_TWO_VIEW
    data_type = TwoViewDataset

    @property
    def schema_type(self) -> type:
        from dpcore.data.schema import Schema

        return Schema

    def schema_to_dict(self, schema) -> dict:
        from dpcore.data.schema import schema_to_dict

        return schema_to_dict(schema)

    def schema_from_dict(self, raw: dict):
        from dpcore.data.schema import schema_from_dict

        return schema_from_dict(raw)

    def load_schema(self, path):
        from dpcore.data.schema import load_schema

        return load_schema(path)

    def load_data(self, source_path, schema):
        return load_two_view(source_path, schema)


class SequenceKind(_Kind):
    """The sequence dataset: :class:`~dpcore.data.sequences.schema.SequenceSchema` and
    :class:`~dpcore.data.sequences.dataset.SequenceDataset`, read from its partitions
    (:mod:`dpcore.data.sequences.partitions`)."""

    key = KIND_SEQUENCES

    @property
    def schema_type(self) -> type:
        from dpcore.data.sequences.schema import SequenceSchema

        return SequenceSchema

    @property
    def data_type(self) -> type:
        from dpcore.data.sequences.dataset import SequenceDataset

        return SequenceDataset

    def schema_to_dict(self, schema) -> dict:
        from dpcore.data.sequences.schema import schema_to_dict

        return schema_to_dict(schema)

    def schema_from_dict(self, raw: dict):
        from dpcore.data.sequences.schema import schema_from_dict

        return schema_from_dict(raw)

    def load_schema(self, path):
        from dpcore.data.sequences.schema import load_sequence_schema

        return load_sequence_schema(path)

    def load_data(self, source_path, schema):
        from dpcore.data.sequences.partitions import load_sequences_partitioned

        return load_sequences_partitioned(source_path, schema)


class TableKind(_Kind):
    """The labelled table: :class:`~dpcore.data.table.schema.TableSchema` and
    :class:`~dpcore.data.table.table.SynthesisTable`, read from its partitions
    (:mod:`dpcore.data.table.partitions`)."""

    key = KIND_TABLE

    @property
    def schema_type(self) -> type:
        from dpcore.data.table.schema import TableSchema

        return TableSchema

    @property
    def data_type(self) -> type:
        from dpcore.data.table.table import SynthesisTable

        return SynthesisTable

    def schema_to_dict(self, schema) -> dict:
        from dpcore.data.table.schema import schema_to_dict

        return schema_to_dict(schema)

    def schema_from_dict(self, raw: dict):
        from dpcore.data.table.schema import schema_from_dict

        return schema_from_dict(raw)

    def load_schema(self, path):
        from dpcore.data.table.schema import load_table_schema

        return load_table_schema(path)

    def load_data(self, source_path, schema):
        from dpcore.data.table.partitions import load_table_partitioned

        return load_table_partitioned(source_path, schema)


#: The dataset kind objects, by key, in registry order (the ledger's ``datasets.kind``: a new
#: kind needs a ledger migration and its object here).
KINDS: Mapping[str, _Kind] = MappingProxyType(
    {k.key: k for k in (TwoViewKind(), SequenceKind(), TableKind())})
assert tuple(KINDS) == DATASET_KINDS


def kind_object(key: str) -> _Kind:
    """The dataset kind object ``key`` (ParameterError naming the known kinds otherwise)."""
    try:
        return KINDS[key]
    except (KeyError, TypeError):
        raise ParameterError(f"dataset kind must be one of {', '.join(DATASET_KINDS)}; "
                             f"got {key!r}") from None


def sample_data_dir() -> Path:
    """The repository's ``sample_data/`` folder (:func:`dpcore.data.loading.sample_data_dir`)."""
    from dpcore.data.loading import sample_data_dir as folder  # lazy: pandas

    return folder()


def _kind_by_type(value, what: str) -> str:
    for key, obj in KINDS.items():
        if isinstance(value, getattr(obj, what)):
            return key
    names = ", ".join(getattr(obj, what).__name__ for obj in KINDS.values())
    raise DataError(f"expected one of {names}; got {type(value).__name__}")


def kind_of_schema(schema) -> str:
    """The dataset kind of a public schema object (DataError for anything else)."""
    return _kind_by_type(schema, "schema_type")


def kind_of_data(data) -> str:
    """The dataset kind of a loaded dataset object (DataError for anything else)."""
    return _kind_by_type(data, "data_type")


def schema_type_names() -> str:
    """The schema types of every kind, comma-separated (for messages)."""
    return ", ".join(obj.schema_type.__name__ for obj in KINDS.values())


def schema_to_dict(kind: str, schema) -> dict:
    """The JSON form of a public schema of ``kind``."""
    return kind_object(kind).schema_to_dict(schema)


def schema_from_dict(kind: str, raw: dict):
    """The validated public schema of ``kind`` from its JSON form (raises DataError)."""
    return kind_object(kind).schema_from_dict(raw)


def find_schema_file(path) -> tuple[str, Path]:
    """``(kind, schema file)`` of a dataset folder or schema file.

    A folder is of the first kind (registry order) whose schema file it holds. A file named
    like one kind's schema file is of that kind; any other file is read as a two-view schema
    (``schema.json``/``.toml`` under another name, as the two-view loader accepts).

    Raises
    ------
    DataError
        A missing path, or a folder without any schema file (the message lists the names
        looked for).
    """
    path = Path(path)
    if path.is_dir():
        for key, spec in DATASET_KIND_SPECS.items():
            for name in spec.schema_files:
                if (path / name).is_file():
                    return key, path / name
        names = [n for spec in DATASET_KIND_SPECS.values() for n in spec.schema_files]
        raise DataError(f"no schema file in the folder (looked for {', '.join(names)})",
                        file=str(path))
    if not path.is_file():
        raise DataError(f"no such folder or file (looked for {str(path)!r})", file=str(path))
    for key, spec in DATASET_KIND_SPECS.items():
        if path.name in spec.schema_files:
            return key, path
    return KIND_TWO_VIEW, path


def load_any_schema(path) -> tuple[str, object]:
    """``(kind, public schema)`` of a dataset folder or schema file (DataError naming the file)."""
    kind, schema_file = find_schema_file(path)
    return kind, kind_object(kind).load_schema(schema_file)


def load_any_dataset(path) -> tuple[str, object]:
    """``(kind, data)`` of a dataset folder or schema file, read with the schema file there.

    For registration by the owner; runs read registered data with the ledger's confirmed
    schema instead (:func:`load_registered_data`).
    """
    kind, schema = load_any_schema(path)
    return kind, load_registered_data(kind, path, schema)


def load_registered_data(kind: str, source_path, schema):
    """The data of a registered dataset of ``kind``, read with its confirmed ``schema``.

    Raises
    ------
    DataError
        The files are missing or do not validate against the schema (file, line, reason).
    ParameterError
        An unknown kind.
    """
    return kind_object(kind).load_data(source_path, schema)


def list_sample_folders() -> list[tuple[str, Path]]:
    """``(kind, folder)`` of every folder under ``sample_data/`` holding a schema file of any
    kind, by folder name."""
    root = sample_data_dir()
    if not root.is_dir():
        return []
    out = []
    for folder in sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.name):
        try:
            out.append((find_schema_file(folder)[0], folder))
        except DataError:
            continue
    return out
