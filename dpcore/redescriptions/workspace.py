"""An analyst's Explore workspace: decisions, tags, notes, picked runs, threshold, list settings.

A workspace holds what an analyst decided about **released** redescriptions — keep or
reject, tags, a note — keyed by ``run_id:red_id`` (:func:`dpcore.redescriptions.listing.entry_key`),
and the settings of the Explore page: the runs picked, the pruning threshold (None: the
suggested one), the tolerance and the list's sort and filters. It holds no statistic at
all, only references to releases and what the analyst typed, so saving, exporting and
importing one costs 0 ε and reveals nothing about the data (docs/PRIVACY.md, §
"Workspaces").

The ledger stores it as JSON per dataset, role and name
(:meth:`dpcore.privacy.ledger.Ledger.save_workspace`). :func:`workspace_from_dict` checks a
document fully — also an exported file brought back — and raises
:class:`~dpcore.errors.ParameterError` naming the first problem, so a bad import changes
nothing.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace

from dpcore.errors import ParameterError
from dpcore.redescriptions.listing import DECISION_VIEWS, SORT_KEYS, entry_key

__all__ = ["WORKSPACE_FORMAT", "DECISIONS", "MAX_TAGS", "MAX_TAG_LENGTH", "MAX_NOTE_LENGTH",
           "Annotation", "Workspace", "workspace_from_dict", "workspace_from_json",
           "parse_tags", "DEFAULT_VIEW", "DECISION_LABELS", "ANNOTATION_COLUMNS",
           "annotation_columns"]

WORKSPACE_FORMAT = 1
DECISIONS = ("keep", "reject")
MAX_TAGS = 20
MAX_TAG_LENGTH = 40
MAX_NOTE_LENGTH = 2000
MAX_ANNOTATIONS = 100_000
_KEY = re.compile(r"^(?P<run>[^:\s]+):(?P<red>\d{1,9})$")
#: The list settings a workspace keeps, with their defaults.
DEFAULT_VIEW: dict = {"sort": "jaccard", "descending": True, "search": "", "attributes": [],
                      "runs": [], "min_jaccard": None, "max_pvalue": None,
                      "min_length": None, "max_length": None, "decisions": "all",
                      "collapse": False}


#: What a tabular export calls each decision (None: the analyst has not decided).
DECISION_LABELS: dict[str | None, str] = {"keep": "kept", "reject": "rejected",
                                          None: "undecided"}
#: The annotation columns of a tabular export (:func:`annotation_columns`), in order.
ANNOTATION_COLUMNS = ("decision", "tags", "note")


@dataclass(frozen=True)
class Annotation:
    """What the analyst said about one released redescription (no statistic)."""

    decision: str | None = None
    tags: tuple[str, ...] = ()
    note: str = ""

    @property
    def empty(self) -> bool:
        return self.decision is None and not self.tags and not self.note

    def to_dict(self) -> dict:
        return {"decision": self.decision, "tags": list(self.tags), "note": self.note}


@dataclass(frozen=True)
class Workspace:
    """One analyst's workspace on one dataset (see the module docstring).

    Attributes
    ----------
    dataset : str
    runs : tuple of str
        Run ids picked on Explore (empty: the page's default).
    threshold : float or None
        The pruning threshold in noisy rows |E11| the analyst chose; None: the suggested one.
    tolerance : float or None
        The tolerance of the suggested threshold (expected Jaccard error), None: default.
    annotations : dict
        ``run_id:red_id`` → :class:`Annotation` (empty ones are dropped).
    view : dict
        List settings (:data:`DEFAULT_VIEW`'s keys).
    """

    dataset: str
    runs: tuple[str, ...] = ()
    threshold: float | None = None
    tolerance: float | None = None
    annotations: dict[str, Annotation] = field(default_factory=dict)
    view: dict = field(default_factory=lambda: dict(DEFAULT_VIEW))

    def annotation(self, key: str) -> Annotation:
        return self.annotations.get(key, Annotation())

    def annotate(self, key: str, **changes) -> Workspace:
        """A copy with ``key``'s annotation changed (``decision``, ``tags``, ``note``)."""
        new = _annotation(key, {**self.annotation(key).to_dict(), **{
            k: list(v) if k == "tags" and isinstance(v, tuple) else v
            for k, v in changes.items()}})
        annotations = dict(self.annotations)
        if new.empty:
            annotations.pop(key, None)
        else:
            annotations[key] = new
        return replace(self, annotations=annotations)

    def decisions(self) -> dict[str, str | None]:
        return {k: a.decision for k, a in self.annotations.items()}

    def to_dict(self) -> dict:
        return {"format": WORKSPACE_FORMAT, "dataset": self.dataset, "runs": list(self.runs),
                "threshold": self.threshold, "tolerance": self.tolerance,
                "annotations": {k: a.to_dict() for k, a in sorted(self.annotations.items())},
                "view": {k: self.view.get(k, v) for k, v in DEFAULT_VIEW.items()}}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False, allow_nan=False)


def annotation_columns(workspace: Workspace | None, run_id: str, red_id: int) -> dict[str, str]:
    """One redescription's decision, tags and note as the columns of a tabular export.

    Parameters
    ----------
    workspace : Workspace or None
        The analyst's workspace (None: nothing decided yet).
    run_id : str
        The run that released the redescription.
    red_id : int
        Its id within that run.

    Returns
    -------
    dict
        :data:`ANNOTATION_COLUMNS` → text: ``decision`` is ``kept``, ``rejected`` or
        ``undecided`` (:data:`DECISION_LABELS`), ``tags`` the tags joined by ``", "`` (a
        tag never holds a comma), ``note`` the note (``""`` when there is none). What the
        analyst typed only, no statistic: exporting it costs 0 ε.
    """
    annotation = Annotation() if workspace is None \
        else workspace.annotation(entry_key(run_id, red_id))
    return {"decision": DECISION_LABELS[annotation.decision],
            "tags": _inert_cell(", ".join(annotation.tags)),
            "note": _inert_cell(annotation.note)}


#: First characters that make a spreadsheet read a CSV cell as a formula.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _inert_cell(text: str) -> str:
    """Free text for a CSV cell that a spreadsheet shows as text, never runs as a formula.

    Why: an exported list is opened by others; a note typed as ``=HYPERLINK(…)`` would
    otherwise run in their spreadsheet. A leading apostrophe is the usual guard.
    """
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


# --------------------------------------------------------------------------- checks

def _fail(message: str):
    raise ParameterError(message)


def parse_tags(value) -> tuple[str, ...]:
    """Tags from a list of strings or a comma-separated text: trimmed, no empty or repeated
    ones, each at most :data:`MAX_TAG_LENGTH` characters, at most :data:`MAX_TAGS`."""
    if value is None:
        return ()
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        _fail(f"tags must be a list of texts or a comma-separated text; got {value!r}")
    tags: list[str] = []
    for item in items:
        if not isinstance(item, str):
            _fail(f"a tag must be text; got {item!r}")
        tag = " ".join(item.split())
        if not tag:
            continue
        if "," in tag or not tag.isprintable():
            _fail(f"a tag may not hold a comma or control characters; got {tag!r}")
        if len(tag) > MAX_TAG_LENGTH:
            _fail(f"a tag has at most {MAX_TAG_LENGTH} characters; {tag[:20]!r}… has "
                  f"{len(tag)}")
        if tag not in tags:
            tags.append(tag)
    if len(tags) > MAX_TAGS:
        _fail(f"a redescription has at most {MAX_TAGS} tags; got {len(tags)}")
    return tuple(tags)


def _annotation(key: str, value) -> Annotation:
    if not isinstance(value, Mapping):
        _fail(f"annotation {key!r} must be an object with decision, tags and note")
    unknown = set(value) - {"decision", "tags", "note"}
    if unknown:
        _fail(f"annotation {key!r} has unknown fields: {', '.join(sorted(map(str, unknown)))}")
    decision = value.get("decision")
    if decision == "":
        decision = None
    if decision is not None and decision not in DECISIONS:
        _fail(f"annotation {key!r}: decision must be keep, reject or null; got {decision!r}")
    note = value.get("note") or ""
    if not isinstance(note, str):
        _fail(f"annotation {key!r}: the note must be text")
    if len(note) > MAX_NOTE_LENGTH:
        _fail(f"annotation {key!r}: a note has at most {MAX_NOTE_LENGTH} characters")
    try:
        tags = parse_tags(value.get("tags"))
    except ParameterError as exc:
        _fail(f"annotation {key!r}: {exc}")
    return Annotation(decision, tags, note.strip())


def _optional_number(doc: Mapping, name: str, low: float, high: float | None,
                     low_open: bool = False) -> float | None:
    value = doc.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value):
        _fail(f"{name} must be a number or null; got {value!r}")
    if value < low or (low_open and value == low) or (high is not None and value > high):
        bound = f"in ({low:g}, {high:g}]" if low_open else (
            f"≥ {low:g}" if high is None else f"in [{low:g}, {high:g}]")
        _fail(f"{name} must be {bound}; got {value!r}")
    return float(value)


def _view(value) -> dict:
    if value is None:
        return dict(DEFAULT_VIEW)
    if not isinstance(value, Mapping):
        _fail("view must be an object of list settings")
    unknown = set(value) - set(DEFAULT_VIEW)
    if unknown:
        _fail(f"view has unknown settings: {', '.join(sorted(map(str, unknown)))}")
    view = {**DEFAULT_VIEW, **value}
    if view["sort"] not in SORT_KEYS:
        _fail(f"view.sort must be one of {', '.join(SORT_KEYS)}; got {view['sort']!r}")
    if view["decisions"] not in DECISION_VIEWS:
        _fail(f"view.decisions must be one of {', '.join(DECISION_VIEWS)}; "
              f"got {view['decisions']!r}")
    for name in ("descending", "collapse"):
        if not isinstance(view[name], bool):
            _fail(f"view.{name} must be true or false")
    if not isinstance(view["search"], str) or len(view["search"]) > 200:
        _fail("view.search must be text of at most 200 characters")
    for name in ("attributes", "runs"):
        if not isinstance(view[name], list) or not all(isinstance(x, str) for x in view[name]):
            _fail(f"view.{name} must be a list of texts")
    _optional_number(view, "min_jaccard", 0.0, 1.0)
    _optional_number(view, "max_pvalue", 0.0, 1.0)
    for name in ("min_length", "max_length"):
        if view[name] is not None and (isinstance(view[name], bool)
                                       or not isinstance(view[name], int) or view[name] < 0):
            _fail(f"view.{name} must be a whole number ≥ 0 or null")
    return view


def workspace_from_dict(doc, *, dataset: str, known_runs: Collection[str] | None = None,
                        known_keys: Collection[str] | None = None) -> Workspace:
    """A checked :class:`Workspace` from its dict form, or from an exported JSON file's.

    Parameters
    ----------
    doc : dict
        ``Workspace.to_dict()``, or an export of the Explore page (its ``workspace``).
    dataset : str
        The dataset it must belong to.
    known_runs : collection of str, optional
        Run ids this session may read on ``dataset``; every run the workspace names must
        be one of them.
    known_keys : collection of str, optional
        ``run_id:red_id`` of every released redescription of those runs; every
        annotation must name one of them.

    Raises
    ------
    ParameterError
        The first problem, in words; nothing is returned.
    """
    if isinstance(doc, Mapping) and "workspace" in doc and "format" not in doc:
        if doc.get("dataset") not in (None, dataset):
            _fail(f"this file was exported from dataset {doc.get('dataset')!r}, not "
                  f"{dataset!r}; pick that dataset to import it")
        doc = doc["workspace"]
    if not isinstance(doc, Mapping):
        _fail("a workspace must be a JSON object (an Explore export or a saved workspace)")
    unknown = set(doc) - {"format", "dataset", "runs", "threshold", "tolerance",
                          "annotations", "view"}
    if unknown:
        _fail(f"not a workspace: unknown fields {', '.join(sorted(map(str, unknown)))}")
    if doc.get("format") != WORKSPACE_FORMAT:
        _fail(f"not a workspace of format {WORKSPACE_FORMAT} (format {doc.get('format')!r})")
    if doc.get("dataset") != dataset:
        _fail(f"this workspace belongs to dataset {doc.get('dataset')!r}, not {dataset!r}; "
              "pick that dataset to import it")
    runs = doc.get("runs") or []
    if not isinstance(runs, list) or not all(isinstance(r, str) and r for r in runs):
        _fail("runs must be a list of run ids")
    if known_runs is not None:
        missing = [r for r in runs if r not in known_runs]
        if missing:
            _fail(f"the workspace names runs this dataset has not (or you may not read): "
                  f"{', '.join(r[:8] for r in missing[:5])}")
    threshold = _optional_number(doc, "threshold", 0.0, None)
    tolerance = _optional_number(doc, "tolerance", 0.0, 1.0, low_open=True)
    raw = doc.get("annotations") or {}
    if not isinstance(raw, Mapping):
        _fail("annotations must be an object: run_id:red_id → decision, tags, note")
    if len(raw) > MAX_ANNOTATIONS:
        _fail(f"at most {MAX_ANNOTATIONS} annotations; got {len(raw)}")
    annotations: dict[str, Annotation] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not _KEY.match(key):
            _fail(f"annotation key {key!r} is not run_id:redescription_id")
        if known_keys is not None and key not in known_keys:
            _fail(f"annotation {key!r} names a redescription no run of this dataset "
                  "released (or one you may not read)")
        annotation = _annotation(key, value)
        if not annotation.empty:
            annotations[key] = annotation
    return Workspace(dataset=dataset, runs=tuple(dict.fromkeys(runs)), threshold=threshold,
                     tolerance=tolerance, annotations=annotations, view=_view(doc.get("view")))


def workspace_from_json(text, *, dataset: str, known_runs: Collection[str] | None = None,
                        known_keys: Collection[str] | None = None) -> Workspace:
    """:func:`workspace_from_dict` of JSON text or bytes (ParameterError for bad JSON)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            _fail("the file is not UTF-8 text (an Explore export is JSON text)")
    if not isinstance(text, str):
        _fail("a workspace must be JSON text")
    try:
        doc = json.loads(text)
    except ValueError as exc:
        _fail(f"the file is not valid JSON ({exc})")
    return workspace_from_dict(doc, dataset=dataset, known_runs=known_runs,
                               known_keys=known_keys)
