"""Public schema of a labelled table for synthesis: what may be known without spending ε.

The data owner declares the schema; nothing in it may be read from the data:

* ``name``, ``description``, ``provenance``, ``public_demo`` (synthetic or public data whose
  true statistics may be shown to everyone);
* ``file``: the table (one CSV or Parquet file, relative to the schema's folder);
* ``label``: ``{"name": ..., "classes": [...]}`` — the label column and its declared classes
  (numbers or texts; a value in the file matches a class by its text form);
* ``features``, in column order: numeric ``{"name", "type": "numeric", "bounds": [lo, hi]}``
  with optional ``"decimals"`` (output rounding; 0 = integers) and ``"unit"``; categorical
  ``{"name", "type": "categorical", "levels": [...]}``.

Numeric values are **clipped** to the public bounds, never scaled by the data's own minimum
and maximum (that would be a non-private release, MC-GEN critique C10). Categorical values
must be declared levels.

Encoding (what every synthesizer works on): a numeric feature is one column
``2·(v − lo)/(hi − lo) − 1`` in [−1, 1]; a categorical feature with q levels is q one-hot
columns in {0, 1}. One record therefore has at most one non-zero column per feature, each of
absolute value ≤ 1; the sensitivities in :mod:`dpcore.synthesis.moments` rest on this.

Stored as JSON (``synthesis_schema.json`` in a dataset folder) with
``"kind": "labelled_table"``.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dpcore.errors import DataError

__all__ = ["TABLE_KIND", "SCHEMA_FILE_NAME", "NUMERIC", "CATEGORICAL", "Feature",
           "TableSchema", "schema_from_dict", "schema_to_dict", "load_table_schema",
           "save_table_schema", "value_text"]

#: The dataset kind written in every labelled-table schema.
TABLE_KIND = "labelled_table"
#: File name of the schema inside a dataset folder.
SCHEMA_FILE_NAME = "synthesis_schema.json"
#: Feature types.
NUMERIC, CATEGORICAL = "numeric", "categorical"


def value_text(value) -> str:
    """The text form a class or level is matched by: ``1``, ``1.0`` and ``"1"`` are all ``"1"``."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        x = float(value)
        return str(int(x)) if math.isfinite(x) and x.is_integer() else repr(x)
    return str(value).strip()


@dataclass(frozen=True)
class Feature:
    """One feature column.

    Attributes
    ----------
    name : str
        Column name.
    type : str
        ``"numeric"`` or ``"categorical"``.
    bounds : tuple of float, optional
        Numeric: the public domain [lo, hi] (lo < hi), in the column's units.
    levels : tuple, optional
        Categorical: the declared levels (numbers or texts), in code order.
    decimals : int, optional
        Numeric: decimals of the synthetic output (0 = integers); None = not rounded.
    unit : str
        Numeric: the unit, for display only.
    """

    name: str
    type: str
    bounds: tuple[float, float] | None = None
    levels: tuple = ()
    decimals: int | None = None
    unit: str = ""

    @property
    def width(self) -> int:
        """Encoded columns: 1 for numeric, the number of levels for categorical."""
        return 1 if self.type == NUMERIC else len(self.levels)

    @property
    def is_numeric(self) -> bool:
        return self.type == NUMERIC


@dataclass(frozen=True)
class TableSchema:
    """The public metadata of a labelled table.

    Attributes
    ----------
    name : str
        Dataset name.
    label : str
        The label column.
    classes : tuple
        The declared classes, in code order (class code ``c`` is ``classes[c]``).
    features : tuple of Feature
        The features, in column order (the label is not among them).
    file : str, optional
        The table file, relative to the schema's folder.
    public_demo : bool
        Synthetic or public data: true statistics may be shown to everyone, seeds allowed.
    description, provenance : str
        Free text.
    """

    name: str
    label: str
    classes: tuple
    features: tuple[Feature, ...]
    file: str | None = None
    public_demo: bool = False
    description: str = ""
    provenance: str = ""
    _offsets: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        offsets, start = [], 0
        for f in self.features:
            offsets.append(start)
            start += f.width
        offsets.append(start)
        object.__setattr__(self, "_offsets", tuple(offsets))

    # --- layout
    @property
    def n_features(self) -> int:
        """p: features before one-hot encoding."""
        return len(self.features)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def width(self) -> int:
        """D: encoded columns (numeric 1 each, categorical one per level)."""
        return self._offsets[-1]

    @property
    def feature_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.features)

    @property
    def columns(self) -> tuple[str, ...]:
        """The table's columns in order: the label first, then the features."""
        return (self.label,) + self.feature_names

    def columns_of(self, feature: int) -> range:
        """The encoded columns of feature ``feature`` (index into ``features``)."""
        return range(self._offsets[feature], self._offsets[feature + 1])

    def feature_index(self, name: str) -> int:
        for i, f in enumerate(self.features):
            if f.name == name:
                return i
        raise DataError(f"unknown feature {name!r}; the schema declares "
                        f"{', '.join(self.feature_names)}")

    def encoded_names(self) -> list[str]:
        """Names of the encoded columns: ``age``, ``sex=F``, ``sex=M``, ..."""
        out = []
        for f in self.features:
            out += [f.name] if f.is_numeric else [f"{f.name}={value_text(v)}" for v in f.levels]
        return out

    def column_feature(self) -> np.ndarray:
        """For each encoded column, the index of its feature (int64[D])."""
        return np.repeat(np.arange(self.n_features), [f.width for f in self.features])

    def numeric_columns(self) -> np.ndarray:
        """Boolean mask over the encoded columns: True for numeric ones."""
        return np.repeat([f.is_numeric for f in self.features],
                         [f.width for f in self.features]).astype(bool)


def _fail(message: str, file) -> DataError:
    return DataError(message, file=None if file is None else str(file))


def _feature_from_dict(d, file, seen: set) -> Feature:
    if not isinstance(d, dict):
        raise _fail(f"each feature must be an object; got {d!r}", file)
    name = d.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _fail(f"a feature needs a non-empty 'name'; got {name!r}", file)
    if name in seen:
        raise _fail(f"feature {name!r} is declared twice", file)
    seen.add(name)
    kind = d.get("type")
    if kind == NUMERIC:
        bounds = d.get("bounds")
        if (not isinstance(bounds, (list, tuple)) or len(bounds) != 2
                or not all(isinstance(b, numbers.Real) and not isinstance(b, bool)
                           and math.isfinite(b) for b in bounds)
                or not bounds[0] < bounds[1]):
            raise _fail(f"numeric feature {name!r} needs public 'bounds' [lo, hi] with "
                        f"finite lo < hi; got {bounds!r}", file)
        decimals = d.get("decimals")
        if decimals is not None and (isinstance(decimals, bool) or not isinstance(decimals, int)
                                     or not 0 <= decimals <= 12):
            raise _fail(f"feature {name!r}: 'decimals' must be an integer in [0, 12]; "
                        f"got {decimals!r}", file)
        return Feature(name, NUMERIC, bounds=(float(bounds[0]), float(bounds[1])),
                       decimals=decimals, unit=str(d.get("unit", "")))
    if kind == CATEGORICAL:
        levels = d.get("levels")
        if not isinstance(levels, (list, tuple)) or len(levels) < 2:
            raise _fail(f"categorical feature {name!r} needs at least two declared "
                        f"'levels'; got {levels!r}", file)
        texts = [value_text(v) for v in levels]
        if len(set(texts)) != len(texts):
            raise _fail(f"categorical feature {name!r} declares a level twice", file)
        return Feature(name, CATEGORICAL, levels=tuple(levels))
    raise _fail(f"feature {name!r}: 'type' must be 'numeric' or 'categorical'; got {kind!r}",
                file)


def schema_from_dict(d: dict, *, file=None) -> TableSchema:
    """Validate and build a schema from its JSON object (DataError naming what is wrong)."""
    if not isinstance(d, dict):
        raise _fail("the schema must be a JSON object", file)
    if d.get("kind", TABLE_KIND) != TABLE_KIND:
        raise _fail(f"'kind' must be {TABLE_KIND!r}; got {d.get('kind')!r}", file)
    name = d.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _fail(f"the schema needs a non-empty 'name'; got {name!r}", file)
    label = d.get("label")
    if not isinstance(label, dict) or not isinstance(label.get("name"), str) \
            or not label["name"].strip():
        raise _fail("the schema needs 'label': {\"name\": ..., \"classes\": [...]}", file)
    classes = label.get("classes")
    if not isinstance(classes, (list, tuple)) or len(classes) < 1:
        raise _fail(f"label {label['name']!r} needs at least one declared class", file)
    texts = [value_text(c) for c in classes]
    if len(set(texts)) != len(texts):
        raise _fail(f"label {label['name']!r} declares a class twice", file)
    features = d.get("features")
    if not isinstance(features, (list, tuple)) or not features:
        raise _fail("the schema needs a non-empty list of 'features'", file)
    seen = {label["name"]}
    feats = tuple(_feature_from_dict(f, file, seen) for f in features)
    public_demo = d.get("public_demo", False)
    if not isinstance(public_demo, bool):
        raise _fail(f"'public_demo' must be true or false; got {public_demo!r}", file)
    table_file = d.get("file")
    if table_file is not None and (not isinstance(table_file, str) or not table_file.strip()):
        raise _fail(f"'file' must be a file name; got {table_file!r}", file)
    return TableSchema(name=name, label=label["name"], classes=tuple(classes), features=feats,
                       file=table_file, public_demo=public_demo,
                       description=str(d.get("description", "")),
                       provenance=str(d.get("provenance", "")))


def schema_to_dict(schema: TableSchema) -> dict:
    """The schema as its JSON object (inverse of :func:`schema_from_dict`)."""
    feats = []
    for f in schema.features:
        if f.is_numeric:
            item = {"name": f.name, "type": NUMERIC,
                    "bounds": [int(b) if float(b).is_integer() else b for b in f.bounds]}
            if f.decimals is not None:
                item["decimals"] = f.decimals
            if f.unit:
                item["unit"] = f.unit
        else:
            item = {"name": f.name, "type": CATEGORICAL, "levels": list(f.levels)}
        feats.append(item)
    out = {"kind": TABLE_KIND, "name": schema.name, "description": schema.description,
           "provenance": schema.provenance, "public_demo": schema.public_demo}
    if schema.file is not None:
        out["file"] = schema.file
    out["label"] = {"name": schema.label, "classes": list(schema.classes)}
    out["features"] = feats
    return out


def load_table_schema(path) -> TableSchema:
    """Read a schema JSON file (a dataset folder is read at ``folder/synthesis_schema.json``)."""
    path = Path(path)
    if path.is_dir():
        path = path / SCHEMA_FILE_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError("schema file not found", file=str(path)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DataError(f"the schema is not valid JSON: {e}", file=str(path)) from None
    return schema_from_dict(data, file=path)


def save_table_schema(schema: TableSchema, path) -> None:
    """Write the schema as JSON (UTF-8), one feature per line."""
    d = schema_to_dict(schema)
    lines = [json.dumps(f, ensure_ascii=False) for f in d.pop("features")]
    head = json.dumps(d, indent=2, ensure_ascii=False)
    text = head[:-2] + ',\n  "features": [\n    ' + ",\n    ".join(lines) + "\n  ]\n}\n"
    Path(path).write_text(text, encoding="utf-8")
