"""Public schemas as the ledger stores them: JSON text by dataset kind, checked to load back.

Each kind (:data:`dpcore.registry.DATASET_KINDS`) stores its schema type's dict form
(named by :class:`dpcore.registry.DatasetKindSpec`): a two-view
:class:`~dpcore.data.schema.Schema`, a :class:`~dpcore.data.sequences.schema.SequenceSchema` or a
:class:`~dpcore.data.table.schema.TableSchema`. Two-view schemas are read through
:func:`dpcore.data.schema.schema_from_json_text`, which caches parsed schemas by their text
(every read of a dataset's record or card parses the stored schemas, and a schema may have
10⁵ categorical levels); the other kinds through a small cache here.
"""

from __future__ import annotations

import json
from functools import lru_cache

from dpcore.data import kinds
from dpcore.data.schema import Schema, schema_from_json_text, schema_to_dict
from dpcore.errors import DataError
from dpcore.registry import KIND_TWO_VIEW

__all__ = ["schema_kind", "stored_schema", "schema_to_json", "schema_from_json"]


def schema_kind(schema) -> str:
    """The dataset kind of a schema object (DataError naming the accepted types otherwise)."""
    if isinstance(schema, Schema):
        return KIND_TWO_VIEW
    try:
        return kinds.kind_of_schema(schema)
    except DataError:
        raise DataError(f"schema must be one of {kinds.schema_type_names()}; got "
                        f"{type(schema).__name__}") from None


def _schema_to_json(schema) -> str:
    """Serialise a schema of any kind for storage, checking that it loads back (DataError)."""
    return stored_schema(schema)[1]


def stored_schema(schema) -> tuple[str, str]:
    """``(kind, JSON text)`` of a schema, checked to load back (DataError if not)."""
    kind = schema_kind(schema)
    try:
        raw = schema_to_dict(schema) if kind == KIND_TWO_VIEW else kinds.schema_to_dict(kind,
                                                                                        schema)
        text = json.dumps(raw, sort_keys=True, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise DataError(f"schema {schema.name!r} cannot be stored as JSON "
                        f"(NaN/inf or a non-JSON value?): {exc}") from None
    try:
        _parse(text, kind)         # through the cache: the first read hits it
    except DataError:
        raise                      # already names what is wrong
    except Exception as exc:  # noqa: BLE001 - any failure to load back is bad schema data
        raise DataError(f"schema {schema.name!r} does not load back from JSON: {exc}") from None
    return kind, text


@lru_cache(maxsize=64)
def _parse_other(text: str, kind: str):
    return kinds.schema_from_dict(kind, json.loads(text))


def _parse(text: str, kind: str):
    if kind == KIND_TWO_VIEW:
        return schema_from_json_text(text)
    return _parse_other(text, kind)


def _schema_from_json(text: str, dataset: str, kind: str = KIND_TWO_VIEW):
    """Load a stored schema of ``kind`` (DataError naming the dataset if it cannot be read)."""
    try:
        return _parse(text, kind)
    except json.JSONDecodeError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure is an unreadable stored schema
        raise DataError(f"stored schema of dataset {dataset!r} cannot be read: {exc}") from None


schema_to_json = _schema_to_json
schema_from_json = _schema_from_json
