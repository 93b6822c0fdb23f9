"""Public schema of a sequence dataset: what may be known without spending ε.

The data owner declares the schema; nothing in it may be read from the data:

* ``name``, ``description``, ``provenance``;
* ``alphabet``: the item names, in code order (item code ``i`` is ``alphabet[i]``). PFS2's
  first-level candidates are the whole alphabet, so it must be declared: an alphabet read
  from the data would reveal rare items (strict mode never does that);
* ``l1``: the public upper bound on the record length kept in PFS2's sample databases
  (the paper's l1; a run uses lmax = min(l1, l2), l2 estimated with noise), in items;
* ``public_demo``: synthetic or public data whose true statistics may be shown to everyone;
* ``files``: where the records are (relative to the schema's folder), either
  ``{"format": "lines", "records": ..., "alphabet": ...}`` (one record per line of
  space-separated item names, and an alphabet file with one name per line) or
  ``{"format": "events", "events": ..., "record_column": ..., "order_column": ...,
  "item_column": ...}`` (a CSV or Parquet event table).

Stored as JSON (``sequence_schema.json`` in a dataset folder) with ``"kind": "sequences"``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from dpcore.errors import DataError

__all__ = ["SequenceSchema", "SEQUENCE_KIND", "SCHEMA_FILE_NAME", "LINES", "EVENTS",
           "schema_from_dict", "schema_to_dict", "load_sequence_schema",
           "save_sequence_schema", "check_item_name"]

#: The dataset kind written in every sequence schema.
SEQUENCE_KIND = "sequences"
#: File name of the schema inside a dataset folder.
SCHEMA_FILE_NAME = "sequence_schema.json"
#: Record file formats.
LINES, EVENTS = "lines", "events"

_MAX_L1 = 1000
_NAME = re.compile(r"^[^\s]+$")


def check_item_name(name, *, file: str | None = None, row: int | None = None) -> str:
    """An item name: a non-empty string without whitespace (records separate items by spaces)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise DataError(f"item name {name!r} must be a non-empty text without spaces",
                        file=file, row=row)
    return name


@dataclass(frozen=True)
class SequenceSchema:
    """The public metadata of a sequence dataset.

    Attributes
    ----------
    name : str
        Dataset name.
    alphabet : tuple of str
        Declared item names; code ``i`` ↔ ``alphabet[i]``. Public.
    l1 : int
        Public upper bound on the record length kept in PFS2's sample databases (items).
    public_demo : bool
        True for synthetic or public data (true statistics may be shown to everyone).
    description, provenance : str
        Free text.
    files : dict
        Where the records are; see the module docstring.
    """

    name: str
    alphabet: tuple[str, ...]
    l1: int = 8
    public_demo: bool = False
    description: str = ""
    provenance: str = ""
    files: dict = field(default_factory=dict)

    @property
    def n_items(self) -> int:
        """Size of the declared alphabet (public)."""
        return len(self.alphabet)

    def item_codes(self) -> dict[str, int]:
        """Item name → code."""
        return {name: i for i, name in enumerate(self.alphabet)}

    def validate(self, *, file: str | None = None) -> SequenceSchema:
        """Return self if well formed, else raise DataError naming the problem."""
        if not isinstance(self.name, str) or not self.name.strip():
            raise DataError("the schema needs a non-empty 'name'", file=file)
        if not isinstance(self.alphabet, tuple) or not self.alphabet:
            raise DataError("the schema needs a non-empty 'alphabet' (the declared item "
                            "names)", file=file)
        seen: dict[str, int] = {}
        for i, item in enumerate(self.alphabet):
            check_item_name(item, file=file)
            if item in seen:
                raise DataError(f"item {item!r} is declared twice in 'alphabet' (positions "
                                f"{seen[item] + 1} and {i + 1})", file=file)
            seen[item] = i
        if isinstance(self.l1, bool) or not isinstance(self.l1, int) \
                or not 1 <= self.l1 <= _MAX_L1:
            raise DataError(f"'l1' must be an integer in [1, {_MAX_L1}]; got {self.l1!r}",
                            file=file)
        if not isinstance(self.public_demo, bool):
            raise DataError(f"'public_demo' must be true or false; got {self.public_demo!r}",
                            file=file)
        if self.files:
            _check_files(self.files, file)
        return self


def _check_files(files: dict, file) -> None:
    fmt = files.get("format")
    if fmt == LINES:
        need, allowed = {"records"}, {"format", "records", "alphabet"}
    elif fmt == EVENTS:
        need = {"events", "record_column", "order_column", "item_column"}
        allowed = need | {"format"}
    else:
        raise DataError(f"'files.format' must be {LINES!r} or {EVENTS!r}; got {fmt!r}",
                        file=file)
    missing, unknown = need - set(files), set(files) - allowed
    if missing:
        raise DataError(f"'files' lacks {', '.join(sorted(missing))}", file=file)
    if unknown:
        raise DataError(f"'files' has unknown key(s) {', '.join(sorted(unknown))}", file=file)
    for key in files:
        if not isinstance(files[key], str) or not files[key]:
            raise DataError(f"'files.{key}' must be a non-empty text", file=file)


def schema_from_dict(d: dict, *, file: str | None = None) -> SequenceSchema:
    """Build and validate a schema from its JSON object."""
    if not isinstance(d, dict):
        raise DataError("the schema must be a JSON object", file=file)
    if d.get("kind", SEQUENCE_KIND) != SEQUENCE_KIND:
        raise DataError(f"'kind' must be {SEQUENCE_KIND!r} for a sequence dataset; got "
                        f"{d.get('kind')!r}", file=file)
    allowed = {"kind", "name", "alphabet", "l1", "public_demo", "description", "provenance",
               "files"}
    unknown = set(d) - allowed
    if unknown:
        raise DataError(f"unknown schema key(s): {', '.join(sorted(unknown))}", file=file)
    alphabet = d.get("alphabet")
    if not isinstance(alphabet, list):
        raise DataError("'alphabet' must be a list of item names", file=file)
    files = d.get("files", {})
    if not isinstance(files, dict):
        raise DataError("'files' must be an object", file=file)
    return SequenceSchema(name=d.get("name"), alphabet=tuple(alphabet), l1=d.get("l1", 8),
                          public_demo=d.get("public_demo", False),
                          description=d.get("description", ""),
                          provenance=d.get("provenance", ""),
                          files=dict(files)).validate(file=file)


def schema_to_dict(schema: SequenceSchema) -> dict:
    """The JSON object of a schema (``kind`` first)."""
    out = {"kind": SEQUENCE_KIND, "name": schema.name, "description": schema.description,
           "provenance": schema.provenance, "public_demo": schema.public_demo,
           "l1": schema.l1, "alphabet": list(schema.alphabet)}
    if schema.files:
        out["files"] = dict(schema.files)
    return out


def load_sequence_schema(path) -> SequenceSchema:
    """Read a schema file (JSON); DataError naming the file on any problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot read the schema ({exc.strerror or exc})",
                        file=str(path)) from None
    except UnicodeDecodeError:
        raise DataError("the schema is not UTF-8 text", file=str(path)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"invalid JSON: {exc.msg}", file=str(path), row=exc.lineno) from None
    return schema_from_dict(data, file=str(path))


def save_sequence_schema(schema: SequenceSchema, path) -> None:
    """Write a schema as JSON (the alphabet on one line per item)."""
    schema.validate()
    data = schema_to_dict(schema)
    alphabet = data.pop("alphabet")
    body = json.dumps(data, ensure_ascii=False, indent=2)[:-2]
    items = ",\n".join("    " + json.dumps(a, ensure_ascii=False) for a in alphabet)
    Path(path).write_text(body + ',\n  "alphabet": [\n' + items + "\n  ]\n}\n",
                          encoding="utf-8")
