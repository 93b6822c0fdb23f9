"""Public schemas as the ledger stores them: JSON text, checked to load back before storing.

The stored form is :func:`dpcore.data.schema.schema_to_dict`; reading goes through
:func:`dpcore.data.schema.schema_from_json_text`, which caches parsed schemas by their text
(every ``list_datasets`` / ``get_dataset`` parses the stored schemas, and a schema may have
10⁵ categorical levels).
"""

from __future__ import annotations

import json

from dpcore.data.schema import Schema, schema_from_json_text, schema_to_dict
from dpcore.errors import DataError

__all__ = ["schema_to_json", "schema_from_json"]


def _schema_to_json(schema) -> str:
    """Serialise a schema for storage, checking that it loads back (DataError if not)."""
    if not isinstance(schema, Schema):
        raise DataError(f"schema must be a dpcore.data.schema.Schema; got {type(schema).__name__}")
    try:
        text = json.dumps(schema_to_dict(schema), sort_keys=True, allow_nan=False,
                          ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise DataError(f"schema {schema.name!r} cannot be stored as JSON "
                        f"(NaN/inf or a non-JSON value?): {exc}") from None
    try:
        schema_from_json_text(text)  # through the cache: the first read hits it
    except DataError:
        raise                      # already names what is wrong
    except Exception as exc:  # noqa: BLE001 - any failure to load back is bad schema data
        raise DataError(f"schema {schema.name!r} does not load back from JSON: {exc}") from None
    return text


def _schema_from_json(text: str, dataset: str) -> Schema:
    """Load a stored schema (DataError naming the dataset if it cannot be read)."""
    try:
        return schema_from_json_text(text)
    except json.JSONDecodeError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure is an unreadable stored schema
        raise DataError(f"stored schema of dataset {dataset!r} cannot be read: {exc}") from None


schema_to_json = _schema_to_json
schema_from_json = _schema_from_json
