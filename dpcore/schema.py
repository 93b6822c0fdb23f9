"""Public schema of a two-view dataset: what may be known without spending ε.

The schema is metadata the data owner declares public: attribute names, their
view (left/right), types, and for numeric attributes a public domain [lo, hi]
or explicit thresholds. In ``strict`` mode every split threshold and every
initial-target bin comes from here, never from the data.

Schema files are JSON or TOML with this shape (JSON shown)::

    {
      "name": "clinic", "description": "...", "provenance": "...",
      "public_demo": true,
      "id_column": "patient_id",            # shared id column (two files)
      "missing_values": ["", "NA"],         # cell texts that mean "missing"
      "views": {"left":  {"name": "diagnoses", "file": "diagnoses.csv"},
                "right": {"name": "labs",      "file": "labs.csv"}},
      "grid_bins": 32, "target_bins": 4,
      "attributes": [
        {"name": "DX_CHF", "view": "left", "type": "boolean"},
        {"name": "sex", "view": "left", "type": "categorical", "categories": ["F", "M"]},
        {"name": "LAB_BNP", "view": "right", "type": "numeric",
         "domain": [0, 5000], "thresholds": null, "unit": "pg/mL"}
      ]
    }

One file holding both views: give both views the same ``file``; each
attribute's ``view`` is then the column→view mapping. A dataset shipped by a
Python package instead of files has ``"source": {"package": ..., "loader": ...}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

BOOLEAN, CATEGORICAL, NUMERIC = "boolean", "categorical", "numeric"
ATTRIBUTE_TYPES = (BOOLEAN, CATEGORICAL, NUMERIC)
LEFT, RIGHT = 0, 1
VIEW_KEYS = ("left", "right")


@dataclass(frozen=True)
class Attribute:
    """One attribute (column) of one view, with its public metadata.

    Attributes
    ----------
    name : str
        Column name (public).
    view : int
        0 = left view, 1 = right view.
    type : str
        ``"boolean"``, ``"categorical"`` or ``"numeric"``.
    categories : tuple of str
        Categorical only: the public category labels; the data column is coded
        0..k-1 in this order.
    domain : tuple of float, optional
        Numeric only: the declared public range [lo, hi]. Values outside it are
        a validation error.
    thresholds : tuple of float, optional
        Numeric only: owner-given split thresholds; when absent, the strict grid
        is ``grid_bins`` equal-width thresholds inside ``domain``.
    true_value, false_value : str, optional
        Boolean only: the cell texts meaning true/false when they are not one of
        the usual spellings (1/0, true/false, t/f, yes/no, y/n) — e.g. "1"/"2".
    unit, description : str
        Free text shown to users.
    """

    name: str
    view: int
    type: str
    categories: tuple[str, ...] = ()
    domain: tuple[float, float] | None = None
    thresholds: tuple[float, ...] | None = None
    true_value: str | None = None
    false_value: str | None = None
    unit: str = ""
    description: str = ""


@dataclass(frozen=True)
class ViewSpec:
    """A view's public name and the file holding its columns (None for package sources)."""

    name: str
    file: str | None = None


@dataclass(frozen=True)
class Schema:
    """The public description of a two-view dataset (see module docstring)."""

    name: str
    attributes: tuple[Attribute, ...]
    views: tuple[ViewSpec, ViewSpec]
    id_column: str | None = None
    description: str = ""
    provenance: str = ""
    public_demo: bool = False
    missing_values: tuple[str, ...] = ("", "NA", "NaN", "nan", "?")
    grid_bins: int = 32
    target_bins: int = 4
    source: dict | None = field(default=None, hash=False)

    def view_attributes(self, view: int) -> tuple[Attribute, ...]:
        """Attributes of one view, in schema order (the row order of that view's array)."""
        return tuple(a for a in self.attributes if a.view == view)

    def split_grid(self, attribute: Attribute) -> np.ndarray:
        """Public split thresholds of a numeric attribute (strict mode).

        Owner-given ``thresholds`` if declared, else ``grid_bins`` equal-width
        interior thresholds of the declared domain: lo + b·(hi−lo)/(B+1), b = 1..B.
        Depends only on the schema, never on data.
        """
        if attribute.thresholds:
            return np.asarray(sorted(set(attribute.thresholds)), dtype=np.float64)
        lo, hi = attribute.domain
        b = int(self.grid_bins)
        return lo + (hi - lo) * np.arange(1, b + 1, dtype=np.float64) / (b + 1)

    def target_edges(self, attribute: Attribute) -> np.ndarray:
        """Interior edges of the public equal-width initial-target bins (strict mode)."""
        lo, hi = attribute.domain
        b = int(self.target_bins)
        return lo + (hi - lo) * np.arange(1, b, dtype=np.float64) / b
