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
      "location": {"longitude": "LON", "latitude": "LAT", "cell_degrees": 4,
                   "lon_range": [72, 136], "lat_range": [16, 56]},   # optional
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

A schema guessed from the data, for the owner to review, comes from
:mod:`dpcore.data.prefill` (owner-only: it reads the private data).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from dpcore.data.names import check_display_name, refused_characters
from dpcore.errors import DataError

BOOLEAN, CATEGORICAL, NUMERIC = "boolean", "categorical", "numeric"
ATTRIBUTE_TYPES = (BOOLEAN, CATEGORICAL, NUMERIC)
LEFT, RIGHT = 0, 1
VIEW_KEYS = ("left", "right")
#: Cell texts (compared in lower case) a Boolean attribute without ``true_value`` /
#: ``false_value`` reads as true / false. The one definition: loading and prefill import it.
TRUE_TEXTS = frozenset({"1", "true", "t", "yes", "y", "1.0"})
FALSE_TEXTS = frozenset({"0", "false", "f", "no", "n", "0.0"})


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
        the usual spellings (:data:`TRUE_TEXTS` / :data:`FALSE_TEXTS`: 1/0, true/false,
        t/f, yes/no, y/n, any case) — e.g. "1"/"2".
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
class Location:
    """A public location grid: where each row is, snapped to declared cells (noisy maps).

    Two numeric attributes of the schema hold each row's longitude and latitude (degrees).
    The owner declares a rectangle ``lon_range`` × ``lat_range`` cut into square cells of
    ``cell_degrees``; a row belongs to the cell holding its coordinates (cells are closed
    below, open above), or to no cell when a coordinate is missing or outside the
    rectangle. Cells, their polygons and their count depend only on this declaration,
    never on the data.
    """

    longitude: str
    latitude: str
    cell_degrees: float
    lon_range: tuple[float, float]
    lat_range: tuple[float, float]

    @property
    def shape(self) -> tuple[int, int]:
        """Number of cells along latitude (rows) and longitude (columns)."""
        return (int(round((self.lat_range[1] - self.lat_range[0]) / self.cell_degrees)),
                int(round((self.lon_range[1] - self.lon_range[0]) / self.cell_degrees)))

    @property
    def n_cells(self) -> int:
        """Number of grid cells (rows × columns of :attr:`shape`)."""
        rows, cols = self.shape
        return rows * cols


#: Most cells a declared location grid may have (a noisy map releases three counts per cell).
MAX_LOCATION_CELLS = 10_000


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
    location: Location | None = None

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
        """Interior edges of the public initial-target bins (strict mode).

        Equal-width bins over the declared domain; an attribute declared with
        thresholds but no domain is cut at ``target_bins − 1`` of its declared
        thresholds, evenly spaced in their sorted order (all of them if fewer).
        Depends only on the schema, never on data.
        """
        b = int(self.target_bins)
        if attribute.domain is None:
            cuts = np.asarray(sorted(set(attribute.thresholds or ())), dtype=np.float64)
            if cuts.size <= b - 1:
                return cuts
            picks = np.round(np.linspace(0, cuts.size - 1, b + 1)[1:-1]).astype(np.int64)
            return cuts[np.unique(picks)]
        lo, hi = attribute.domain
        return lo + (hi - lo) * np.arange(1, b, dtype=np.float64) / b


# ---------------------------------------------------------------------------
# Reading, writing and validating schema files
# ---------------------------------------------------------------------------

DEFAULT_MISSING_VALUES = ("", "NA", "NaN", "nan", "?")
_TOP_KEYS = {"name", "description", "provenance", "public_demo", "id_column", "missing_values",
             "views", "grid_bins", "target_bins", "attributes", "source", "location"}
_LOCATION_KEYS = {"longitude", "latitude", "cell_degrees", "lon_range", "lat_range"}
_ATTR_KEYS = {"name", "view", "type", "categories", "domain", "thresholds", "true_value",
              "false_value", "unit", "description"}
_VIEW_KEYS = {"name", "file"}
_SOURCE_KEYS = {"package", "loader", "kwargs"}
#: Package sources a schema may name: only scikit-learn's bundled (no-download) loaders, so a
#: schema file can never make dpcore import or call arbitrary code.
ALLOWED_SOURCES = {"sklearn": ("load_diabetes", "load_iris", "load_wine", "load_breast_cancer",
                               "load_linnerud")}


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _check_keys(d: dict, allowed: set, what: str, file, column=None) -> None:
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise DataError(f"unknown key(s) {', '.join(map(repr, unknown))} in {what}; allowed keys: "
                        f"{', '.join(sorted(allowed))}", file=file, column=column)


def _attribute_from_dict(d, index: int, file) -> Attribute:
    label = f"attributes[{index}]"
    if not isinstance(d, dict):
        raise DataError(f"{label} must be an object/table, got {type(d).__name__}", file=file)
    name = d.get("name")
    if not isinstance(name, str) or not name.strip():
        raise DataError(f"{label} needs a non-empty string \"name\"", file=file)
    name = check_display_name(name.strip(), "attribute name", file=file)
    _check_keys(d, _ATTR_KEYS, "the attribute", file, name)
    view = d.get("view")
    if view not in VIEW_KEYS:
        raise DataError(f"\"view\" must be \"left\" or \"right\", got {view!r}", file=file,
                        column=name)
    typ = d.get("type")
    if typ not in ATTRIBUTE_TYPES:
        raise DataError(f"unknown attribute type {typ!r}; expected one of "
                        f"{', '.join(ATTRIBUTE_TYPES)}", file=file, column=name)

    def reject(*keys):
        for k in keys:
            if d.get(k) not in (None, [], ()):
                raise DataError(f"\"{k}\" is not allowed on a {typ} attribute", file=file,
                                column=name)

    categories: tuple[str, ...] = ()
    domain = thresholds = None
    true_value = false_value = None
    if typ == NUMERIC:
        reject("categories", "true_value", "false_value")
        domain, thresholds = _numeric_grid_from_dict(d, name, file)
    elif typ == CATEGORICAL:
        reject("domain", "thresholds", "true_value", "false_value")
        categories = _categories_from_dict(d, name, file)
    else:  # BOOLEAN
        reject("domain", "thresholds", "categories")
        true_value, false_value = _boolean_values_from_dict(d, name, file)
    for k in ("unit", "description"):
        if d.get(k) is not None and not isinstance(d.get(k), str):
            raise DataError(f"\"{k}\" must be a string", file=file, column=name)
    return Attribute(name=name, view=VIEW_KEYS.index(view), type=typ, categories=categories,
                     domain=domain, thresholds=thresholds, true_value=true_value,
                     false_value=false_value, unit=d.get("unit") or "",
                     description=d.get("description") or "")


def _numeric_grid_from_dict(d: dict, name: str, file):
    """The declared ``(domain, thresholds)`` of a numeric attribute (either may be None)."""
    domain = thresholds = None
    dom = d.get("domain")
    if dom is not None:
        if (not isinstance(dom, (list, tuple)) or len(dom) != 2
                or not all(_is_number(x) for x in dom)):
            raise DataError(f"\"domain\" must be two numbers [lo, hi], got {dom!r}",
                            file=file, column=name)
        lo, hi = float(dom[0]), float(dom[1])
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise DataError(f"\"domain\" must be finite, got {dom!r}", file=file, column=name)
        if lo >= hi:
            raise DataError(f"\"domain\" needs lo < hi, got [{dom[0]}, {dom[1]}]", file=file,
                            column=name)
        domain = (lo, hi)
    thr = d.get("thresholds")
    if thr is not None:
        if (not isinstance(thr, (list, tuple)) or not thr
                or not all(_is_number(x) and np.isfinite(x) for x in thr)):
            raise DataError(f"\"thresholds\" must be a non-empty list of finite numbers, got "
                            f"{thr!r}", file=file, column=name)
        thresholds = tuple(float(x) for x in thr)
        if domain is not None:
            outside = [t for t in thresholds if not domain[0] <= t <= domain[1]]
            if outside:
                raise DataError(f"threshold {outside[0]} lies outside the declared domain "
                                f"[{dom[0]}, {dom[1]}]", file=file, column=name)
    if domain is None and thresholds is None:
        raise DataError("a numeric attribute needs a public \"domain\" [lo, hi] or explicit "
                        "\"thresholds\" (declared by the data owner, never taken from the "
                        "data)", file=file, column=name)
    return domain, thresholds


def _categories_from_dict(d: dict, name: str, file) -> tuple[str, ...]:
    """The declared levels of a categorical attribute."""
    cats = d.get("categories")
    if not isinstance(cats, (list, tuple)) or not cats:
        raise DataError("a categorical attribute needs a non-empty list \"categories\"",
                        file=file, column=name)
    if not all(isinstance(c, (str, int)) and not isinstance(c, bool) for c in cats):
        raise DataError(f"\"categories\" must be strings, got {cats!r}", file=file,
                        column=name)
    categories = tuple(str(c).strip() for c in cats)
    if len(categories) < 2:
        raise DataError("a categorical attribute needs at least 2 categories, got "
                        f"{list(categories)!r}", file=file, column=name)
    if len(set(categories)) != len(categories):     # linear: 10⁵ levels are fine
        seen: set[str] = set()
        for c in categories:
            if c in seen:
                raise DataError(f"duplicate category {c!r}", file=file, column=name)
            seen.add(c)
    if "" in categories:
        raise DataError("an empty category label is not allowed", file=file, column=name)
    if refused_characters(" ".join(categories)):      # one pass; then name the level
        for c in categories:
            check_display_name(c, "category", file=file, column=name)
    return categories


def _boolean_values_from_dict(d: dict, name: str, file) -> tuple[str | None, str | None]:
    """The declared ``(true_value, false_value)`` of a boolean attribute (both None when
    neither is declared)."""
    true_value = false_value = None
    tv, fv = d.get("true_value"), d.get("false_value")
    if (tv is None) != (fv is None):
        raise DataError("give both \"true_value\" and \"false_value\" or neither", file=file,
                        column=name)
    if tv is not None:
        for k, v in (("true_value", tv), ("false_value", fv)):
            if not isinstance(v, (str, int)) or isinstance(v, bool) or not str(v).strip():
                raise DataError(f"\"{k}\" must be a non-empty string, got {v!r}", file=file,
                                column=name)
        true_value, false_value = str(tv).strip(), str(fv).strip()
        if true_value == false_value:
            raise DataError(f"\"true_value\" and \"false_value\" are both {true_value!r}",
                            file=file, column=name)
    return true_value, false_value


def schema_from_dict(d: dict, *, file: str | None = None) -> Schema:
    """Build and validate a :class:`Schema` from its dict form (parsed JSON/TOML).

    Parameters
    ----------
    d : dict
        The schema as in the module docstring.
    file : str, optional
        Name of the schema file, used in error messages only.

    Returns
    -------
    Schema
        Public metadata only; building it reads no data.

    Raises
    ------
    DataError
        Naming the schema file and the attribute: unknown key or type, numeric attribute
        without domain and thresholds, lo ≥ hi, categorical without categories, duplicate
        names, view not left/right, an empty view, grid_bins < 1, target_bins < 2, control or
        invisible format characters (e.g. U+202E) in an attribute name, view name, category
        or the id column (see :func:`dpcore.data.names.check_display_name`), ...

    Notes
    -----
    Linear in the size of the schema (a categorical attribute may have 10⁵ levels).
    """
    if not isinstance(d, dict):
        raise DataError(f"the schema must be an object/table at top level, got "
                        f"{type(d).__name__}", file=file)
    _check_keys(d, _TOP_KEYS, "the schema", file)
    name = d.get("name")
    if not isinstance(name, str) or not name.strip():
        raise DataError("the schema needs a non-empty string \"name\"", file=file)
    for k in ("description", "provenance"):
        if d.get(k) is not None and not isinstance(d.get(k), str):
            raise DataError(f"\"{k}\" must be a string", file=file)
    public_demo = d.get("public_demo", False)
    if not isinstance(public_demo, bool):
        raise DataError(f"\"public_demo\" must be true or false, got {public_demo!r}", file=file)
    id_column = d.get("id_column")
    if id_column is not None and (not isinstance(id_column, str) or not id_column.strip()):
        raise DataError(f"\"id_column\" must be a non-empty string, got {id_column!r}", file=file)
    id_column = id_column.strip() if id_column is not None else None
    if id_column is not None:
        check_display_name(id_column, "\"id_column\"", file=file)
    mv = d.get("missing_values", list(DEFAULT_MISSING_VALUES))
    if not isinstance(mv, (list, tuple)) or not all(isinstance(x, str) for x in mv):
        raise DataError(f"\"missing_values\" must be a list of strings, got {mv!r}", file=file)
    bins = {}
    for k, minimum, default in (("grid_bins", 1, 32), ("target_bins", 2, 4)):
        b = d.get(k, default)
        if not isinstance(b, int) or isinstance(b, bool) or b < minimum:
            raise DataError(f"\"{k}\" must be an integer ≥ {minimum}, got {b!r}", file=file)
        bins[k] = b

    source = _source_from_dict(d.get("source"), file)
    views = _views_from_dict(d.get("views"), source, id_column, file)
    attributes = _attributes_from_dict(d.get("attributes"), id_column, views, file)
    location = _location_from_dict(d.get("location"), attributes, file)
    return Schema(name=name.strip(), attributes=tuple(attributes), views=(views[0], views[1]),
                  id_column=id_column, description=d.get("description") or "",
                  provenance=d.get("provenance") or "", public_demo=public_demo,
                  missing_values=tuple(mv), grid_bins=bins["grid_bins"],
                  target_bins=bins["target_bins"], source=source, location=location)


def _source_from_dict(source, file) -> dict | None:
    """The schema's package ``source`` (None: the views name files)."""
    if source is not None:
        if not isinstance(source, dict):
            raise DataError("\"source\" must be an object {\"package\": ..., \"loader\": ...}",
                            file=file)
        _check_keys(source, _SOURCE_KEYS, "\"source\"", file)
        pkg, loader = source.get("package"), source.get("loader")
        if pkg not in ALLOWED_SOURCES or loader not in ALLOWED_SOURCES[pkg]:
            allowed = "; ".join(f"{p}: {', '.join(ls)}" for p, ls in ALLOWED_SOURCES.items())
            raise DataError(f"unsupported package source {pkg!r}/{loader!r}; allowed: {allowed}",
                            file=file)
        if not isinstance(source.get("kwargs", {}), dict):
            raise DataError("\"source.kwargs\" must be an object", file=file)
        source = {"package": pkg, "loader": loader, "kwargs": dict(source.get("kwargs", {}))}
    return source


def _views_from_dict(views_d, source: dict | None, id_column: str | None, file
                     ) -> list[ViewSpec]:
    """The left and right :class:`ViewSpec` (names and files)."""
    if not isinstance(views_d, dict):
        raise DataError("the schema needs \"views\" with \"left\" and \"right\"", file=file)
    unknown = sorted(set(views_d) - set(VIEW_KEYS))
    if unknown:
        raise DataError(f"\"views\" has key(s) {unknown!r}; only \"left\" and \"right\" are "
                        f"allowed", file=file)
    views = []
    for key in VIEW_KEYS:
        v = views_d.get(key)
        if not isinstance(v, dict):
            raise DataError(f"\"views\" needs a \"{key}\" entry with \"name\" and \"file\"",
                            file=file)
        _check_keys(v, _VIEW_KEYS, f"views.{key}", file)
        vname = v.get("name", key)
        if not isinstance(vname, str) or not vname.strip():
            raise DataError(f"views.{key}.name must be a non-empty string", file=file)
        vfile = v.get("file")
        if vfile is not None and (not isinstance(vfile, str) or not vfile.strip()):
            raise DataError(f"views.{key}.file must be a non-empty string", file=file)
        if source is None and vfile is None:
            raise DataError(f"views.{key} needs a \"file\" (or the schema a package \"source\")",
                            file=file)
        if source is not None and vfile is not None:
            raise DataError(f"views.{key} names a file but the schema loads from a package "
                            f"\"source\"; give one or the other", file=file)
        check_display_name(vname.strip(), f"views.{key}.name", file=file)
        views.append(ViewSpec(vname.strip(), vfile.strip() if vfile else None))
    if (source is None and views[0].file != views[1].file and id_column is None):
        raise DataError("the two views are in different files, so the schema needs an "
                        "\"id_column\" to join them", file=file)
    return views


def _attributes_from_dict(attrs_d, id_column: str | None, views: list[ViewSpec], file
                          ) -> list[Attribute]:
    """Every attribute, each name once, each view with at least one."""
    if not isinstance(attrs_d, (list, tuple)) or not attrs_d:
        raise DataError("the schema needs a non-empty list \"attributes\"", file=file)
    attributes = [_attribute_from_dict(a, i, file) for i, a in enumerate(attrs_d)]
    seen = set()
    for a in attributes:
        if a.name in seen:
            raise DataError("duplicate attribute name", file=file, column=a.name)
        if id_column is not None and a.name == id_column:
            raise DataError("the id column cannot also be an attribute", file=file, column=a.name)
        seen.add(a.name)
    for v, key in enumerate(VIEW_KEYS):
        if not any(a.view == v for a in attributes):
            raise DataError(f"the {key} view {views[v].name!r} has no attributes", file=file)
    return attributes


def _location_from_dict(d, attributes: list[Attribute], file) -> Location | None:
    """Validate the optional ``location`` block (see :class:`Location`)."""
    if d is None:
        return None
    if not isinstance(d, dict):
        raise DataError("\"location\" must be an object {\"longitude\", \"latitude\", "
                        "\"cell_degrees\", \"lon_range\", \"lat_range\"}", file=file)
    _check_keys(d, _LOCATION_KEYS, "\"location\"", file)
    missing = sorted(_LOCATION_KEYS - set(d))
    if missing:
        raise DataError(f"\"location\" needs {', '.join(missing)}", file=file)
    by_name = {a.name: a for a in attributes}
    for key in ("longitude", "latitude"):
        name = d[key]
        if not isinstance(name, str) or name not in by_name:
            raise DataError(f"\"location.{key}\" names {name!r}, which is not an attribute "
                            "of the schema", file=file)
        if by_name[name].type != NUMERIC:
            raise DataError(f"\"location.{key}\" must name a numeric attribute (degrees); "
                            f"it is {by_name[name].type}", file=file, column=name)
    if d["longitude"] == d["latitude"]:
        raise DataError("\"location\" needs two different attributes for longitude and "
                        "latitude", file=file)
    cell = d["cell_degrees"]
    if not _is_number(cell) or not 0 < cell <= 90:
        raise DataError(f"\"location.cell_degrees\" must be a number in (0, 90], got {cell!r}",
                        file=file)
    ranges = {}
    for key, (lo_ok, hi_ok) in (("lon_range", (-180.0, 180.0)), ("lat_range", (-90.0, 90.0))):
        r = d[key]
        if (not isinstance(r, (list, tuple)) or len(r) != 2
                or not all(_is_number(x) for x in r)):
            raise DataError(f"\"location.{key}\" must be two numbers [lo, hi], got {r!r}",
                            file=file)
        lo, hi = float(r[0]), float(r[1])
        if not lo_ok <= lo < hi <= hi_ok:
            raise DataError(f"\"location.{key}\" must satisfy {lo_ok:g} ≤ lo < hi ≤ {hi_ok:g}, "
                            f"got {r!r}", file=file)
        steps = (hi - lo) / float(cell)
        if abs(steps - round(steps)) > 1e-9 * max(1.0, steps):
            raise DataError(f"\"location.{key}\" {r!r} is not a whole number of cells of "
                            f"{cell!r} degrees", file=file)
        ranges[key] = (lo, hi)
    location = Location(d["longitude"], d["latitude"], float(cell), ranges["lon_range"],
                        ranges["lat_range"])
    if location.n_cells > MAX_LOCATION_CELLS:
        raise DataError(f"\"location\" declares {location.n_cells} cells; at most "
                        f"{MAX_LOCATION_CELLS} (use larger cells)", file=file)
    return location


def _num_out(x: float):
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2 ** 53 else x


def _attribute_to_dict(a: Attribute) -> dict:
    out = {"name": a.name, "view": VIEW_KEYS[a.view] if a.view in (0, 1) else a.view,
           "type": a.type}
    if a.categories:
        out["categories"] = list(a.categories)
    if a.domain is not None:
        out["domain"] = [_num_out(x) for x in a.domain]
    if a.thresholds:
        out["thresholds"] = [_num_out(x) for x in a.thresholds]
    if a.true_value is not None:
        out["true_value"] = a.true_value
    if a.false_value is not None:
        out["false_value"] = a.false_value
    if a.unit:
        out["unit"] = a.unit
    if a.description:
        out["description"] = a.description
    return out


def schema_to_dict(schema: Schema) -> dict:
    """The dict form of a schema (JSON/TOML-ready; ``schema_from_dict`` inverts it).

    Optional attribute fields that are empty are left out; integral numbers are written as ints.
    """
    d = {"name": schema.name, "description": schema.description,
         "provenance": schema.provenance, "public_demo": schema.public_demo}
    if schema.id_column is not None:
        d["id_column"] = schema.id_column
    d["missing_values"] = list(schema.missing_values)
    if schema.source is not None:
        d["source"] = {k: v for k, v in schema.source.items() if k != "kwargs" or v}
    d["views"] = {}
    for key, v in zip(VIEW_KEYS, schema.views):
        vd = {"name": v.name}
        if v.file is not None:
            vd["file"] = v.file
        d["views"][key] = vd
    d["grid_bins"] = schema.grid_bins
    d["target_bins"] = schema.target_bins
    if schema.location is not None:
        loc = schema.location
        d["location"] = {"longitude": loc.longitude, "latitude": loc.latitude,
                         "cell_degrees": _num_out(loc.cell_degrees),
                         "lon_range": [_num_out(x) for x in loc.lon_range],
                         "lat_range": [_num_out(x) for x in loc.lat_range]}
    d["attributes"] = [_attribute_to_dict(a) for a in schema.attributes]
    return d


def validate_schema(schema: Schema, *, file: str | None = None) -> Schema:
    """Check a programmatically built :class:`Schema` with the same rules as a schema file.

    Returns the normalised schema; raises :class:`DataError` like :func:`schema_from_dict`.
    """
    return schema_from_dict(schema_to_dict(schema), file=file)


#: Parsed schemas by their JSON text (see :func:`schema_from_json_text`): at most this many
#: entries, and at most this many characters of JSON text in all (a text above that is parsed
#: but not kept).
SCHEMA_CACHE_MAX_ENTRIES = 256
SCHEMA_CACHE_MAX_CHARS = 64_000_000
_schema_cache: OrderedDict[str, Schema] = OrderedDict()
_schema_cache_chars = 0
_schema_cache_lock = threading.Lock()


def schema_from_json_text(text: str) -> Schema:
    """Parse and validate a schema stored as JSON text (the :func:`schema_to_dict` form).

    The ledger stores each dataset's schema this way and reads it back on every read of a
    dataset's record or card (the app's sidebar does so on every rerun), so parsed
    schemas are cached by their text, least recently used first out (bounded by
    :data:`SCHEMA_CACHE_MAX_ENTRIES` and :data:`SCHEMA_CACHE_MAX_CHARS`). A hit costs hashing
    and comparing the text. :class:`Schema` is frozen, so the cached object is shared; its
    ``source`` dict (the one mutable field) is copied for every caller.

    Parameters
    ----------
    text : str
        JSON text of a schema dict.

    Returns
    -------
    Schema

    Raises
    ------
    json.JSONDecodeError
        If ``text`` is not JSON.
    DataError
        As :func:`schema_from_dict` (failures are not cached).
    """
    import copy
    import dataclasses
    import json

    global _schema_cache_chars
    with _schema_cache_lock:
        schema = _schema_cache.get(text)
        if schema is not None:
            _schema_cache.move_to_end(text)
    if schema is None:
        schema = schema_from_dict(json.loads(text))
        if len(text) <= SCHEMA_CACHE_MAX_CHARS:
            with _schema_cache_lock:
                if text not in _schema_cache:
                    _schema_cache[text] = schema
                    _schema_cache_chars += len(text)
                while (len(_schema_cache) > SCHEMA_CACHE_MAX_ENTRIES
                       or _schema_cache_chars > SCHEMA_CACHE_MAX_CHARS):
                    old, _ = _schema_cache.popitem(last=False)
                    _schema_cache_chars -= len(old)
    if schema.source is not None:
        schema = dataclasses.replace(schema, source=copy.deepcopy(schema.source))
    return schema


def clear_schema_cache() -> None:
    """Empty the cache of :func:`schema_from_json_text` (tests and benchmarks)."""
    global _schema_cache_chars
    with _schema_cache_lock:
        _schema_cache.clear()
        _schema_cache_chars = 0


def load_schema(path) -> Schema:
    """Read and validate a schema file: ``.json`` or ``.toml`` (by extension).

    TOML has no ``null``: leave optional keys out instead. Raises :class:`DataError` naming
    the file (and line, for syntax errors) and the attribute.
    """
    import json
    import tomllib
    from pathlib import Path

    path = Path(path)
    label = str(path)
    ext = path.suffix.lower()
    if ext not in (".json", ".toml"):
        raise DataError("a schema file must end in .json or .toml", file=label)
    if not path.is_file():
        raise DataError("schema file not found", file=label)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"cannot read the schema file: {e}", file=label) from None
    try:
        d = json.loads(text) if ext == ".json" else tomllib.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(f"invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}",
                        file=label) from None
    except tomllib.TOMLDecodeError as e:
        raise DataError(f"invalid TOML: {e}", file=label) from None
    return schema_from_dict(d, file=label)


def save_schema(schema: Schema, path) -> None:
    """Write a schema as JSON (validated first), one attribute per line for easy editing."""
    import json
    import re
    from pathlib import Path

    d = schema_to_dict(validate_schema(schema, file=str(path)))
    attrs = d.pop("attributes")
    head = json.dumps(d, indent=2, ensure_ascii=False)
    # lists of scalars on one line
    head = re.sub(r"\[\s*\n\s*((?:[^\[\]{}\n]+,\s*\n\s*)*[^\[\]{}\n]+?)\s*\n\s*\]",
                  lambda m: "[" + re.sub(r",\s*\n\s*", ", ", m.group(1)) + "]", head)
    lines = ",\n".join("    " + json.dumps(a, ensure_ascii=False) for a in attrs)
    text = head[:-2] + ',\n  "attributes": [\n' + lines + "\n  ]\n}\n"
    json.loads(text)  # self-check
    Path(path).write_text(text, encoding="utf-8")
