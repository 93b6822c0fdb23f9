"""The Explore list of released redescriptions: entries, filters, sorting, near-duplicates.

Everything here is post-processing of DP releases (a stored
:class:`~dpcore.redescriptions.results.RunResult` without its owner diagnostics) and of
what the analyst typed: it costs 0 ε and reads no data.

* :func:`list_entries` — one :class:`ListEntry` per released redescription: its noisy
  statistics, the attributes its queries use (from the released trees' split tests or
  the released literals), its length (literals on both sides) and its noisy 2×2
  contingency table (:func:`contingency_cells`).
* :func:`filter_entries` — by noisy support, noisy J, noisy p-value, query length, run,
  attributes used, a search text on attribute names, and the analyst's keep/reject
  decision.
* :func:`sort_entries` — by any of :data:`SORT_KEYS`; a statistic a run did not release
  (NaN) always sorts last.
* :func:`collapse_near_duplicates` — redescriptions with the same attributes on each side
  whose thresholds overlap (:func:`near_duplicates`) become one group, shown as its best
  member with a count.

A statistic a run did not release is NaN here (never a guess): faithful Serenade
releases only |E11| and |E10|+|E01|, Serenade keeps no noisy row count Ñ (so no |E00|).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from dpcore.errors import ParameterError
from dpcore.redescriptions.results import Redescription, RunResult

__all__ = ["ListEntry", "ListFilter", "Group", "SORT_KEYS", "DECISION_VIEWS", "entry_key",
           "contingency_cells", "query_constraints", "list_entries", "filter_entries",
           "sort_entries", "near_duplicates", "collapse_near_duplicates"]

NAN = math.nan
#: Sort keys → what the list calls them.
SORT_KEYS: dict[str, str] = {"jaccard": "noisy J", "support": "noisy |E11|",
                             "pvalue": "noisy p-value", "length": "query length",
                             "run": "run", "attributes": "attributes"}
#: Which decisions a list shows: key → label.
DECISION_VIEWS: dict[str, str] = {"all": "all", "not_rejected": "all but rejected",
                                  "undecided": "undecided", "keep": "kept by hand",
                                  "reject": "rejected"}
_ANY = "*"


def entry_key(run_id: str, red_id: int) -> str:
    """The stable key of one redescription of one run (workspaces store it)."""
    return f"{run_id}:{int(red_id)}"


def _num(value) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return NAN
    return value if math.isfinite(value) else NAN


# --------------------------------------------------------------------------- constraints

#: One side's constraints: attribute → ("num", low, high) with the interval (low, high]
#: or ("set", frozenset of value tokens); the token "*" means any value.
Constraints = dict[str, tuple]


def _merge(constraints: Constraints, attribute: str, new: tuple) -> None:
    """Hull of two constraints on one attribute (a disjunction covers both)."""
    old = constraints.get(attribute)
    if old is None:
        constraints[attribute] = new
    elif old[0] == new[0] == "num":
        constraints[attribute] = ("num", min(old[1], new[1]), max(old[2], new[2]))
    else:
        constraints[attribute] = ("set", _tokens(old) | _tokens(new))


def _tokens(c: tuple) -> frozenset:
    return c[1] if c[0] == "set" else frozenset({_ANY})


def _tree_literal(conditions, negated: bool) -> Constraints:
    """The constraints of one tree leaf's path (a negated leaf constrains nothing exactly)."""
    out: Constraints = {}
    lows: dict[str, float] = {}
    highs: dict[str, float] = {}
    for c in conditions:
        if negated:
            out[c.attribute] = (("num", -math.inf, math.inf) if c.op in ("<=", ">")
                                else ("set", frozenset({_ANY})))
        elif c.op == ">":
            lows[c.attribute] = max(lows.get(c.attribute, -math.inf), float(c.value))
        elif c.op == "<=":
            highs[c.attribute] = min(highs.get(c.attribute, math.inf), float(c.value))
        elif c.op == "!=":
            _merge(out, c.attribute, ("set", frozenset({_ANY})))
        else:
            token = frozenset({f"{c.op} {c.value}"})
            prev = out.get(c.attribute)
            if prev is None or _ANY in _tokens(prev):
                out[c.attribute] = ("set", token)
            else:                                  # a conjunction: both must hold
                out[c.attribute] = ("set", _tokens(prev) & token)
    for attribute in set(lows) | set(highs):
        out[attribute] = ("num", lows.get(attribute, -math.inf), highs.get(attribute, math.inf))
    return out


def query_constraints(result: RunResult, red: Redescription, side: int) -> Constraints:
    """What one side of ``red`` asks of each attribute it uses (released structure only).

    Tree queries: the split tests on the paths to the query's leaves (a negated leaf
    uses its path's attributes with any value). Literal queries (Serenade, custom
    queries): each test. A disjunction — or a left-to-right formula — takes the hull
    of its literals' constraints per attribute, so two queries whose constraints overlap
    may select common rows.
    """
    query = red.left if side == 0 else red.right
    out: Constraints = {}
    if query.tests:
        for t in query.tests:
            if t.kind == "interval":
                new = ("num", -math.inf if t.low is None else float(t.low),
                       math.inf if t.high is None else float(t.high))
            else:
                new = ("set", frozenset({f"{t.kind} {t.value}"}))
            _merge(out, t.attribute, new)
        return out
    try:
        tree = result.trees[query.tree]
    except (IndexError, TypeError):
        return out
    for literal in query.literals:
        if not 0 <= literal.leaf < tree.n_leaves:
            continue
        for attribute, c in _tree_literal(tree.leaf_conditions[literal.leaf],
                                          literal.negated).items():
            _merge(out, attribute, c)
    return out


def _overlap(a: tuple, b: tuple) -> bool:
    if a[0] == b[0] == "num":
        return max(a[1], b[1]) < min(a[2], b[2]) or (a[1], a[2]) == (b[1], b[2])
    ta, tb = _tokens(a), _tokens(b)
    return _ANY in ta or _ANY in tb or bool(ta & tb)


def _query_length(red: Redescription) -> int:
    return sum(len(q.tests) if q.tests else len(q.literals) for q in (red.left, red.right))


# --------------------------------------------------------------------------- cells

def contingency_cells(result: RunResult, red: Redescription) -> tuple[float, float, float,
                                                                      float]:
    """The noisy 2×2 table (|E11|, |E10|, |E01|, |E00|) of ``red``, from released values only.

    |E11| is the released noisy support, |E10| = |q_L| − |E11|, |E01| = |q_R| − |E11| from
    the released supports, and |E00| = Ñ − |q_L ∪ q_R| from the noisy row count Ñ its
    extraction released (tree miners: the leaf×leaf table's Ñ; custom queries: the sum of
    their 4-cell table). Derived cells are clipped at 0. A cell the run did not release is
    NaN: faithful Serenade releases no |q_L|, |q_R| (so no |E10|, |E01|, |E00|), Serenade
    keeps no Ñ (so no |E00|). Post-processing: 0 ε.
    """
    e11 = _num(red.support_both)
    left, right = _num(red.support_left), _num(red.support_right)
    e10 = max(left - e11, 0.0) if math.isfinite(left) and math.isfinite(e11) else NAN
    e01 = max(right - e11, 0.0) if math.isfinite(right) and math.isfinite(e11) else NAN
    n = NAN
    record = None
    if 0 <= red.extraction < len(result.extractions):
        record = result.extractions[red.extraction]
    elif red.extraction == -1 and len(result.extractions) == 1 \
            and result.extractions[0].left_tree == -1:
        record = result.extractions[0]          # a custom query's own 4-cell table
    if record is not None:
        n = max(_num(record.noisy_n), 0.0)
    union = left + right - e11
    e00 = max(n - union, 0.0) if all(map(math.isfinite, (n, union))) else NAN
    return (e11, e10, e01, e00)


# --------------------------------------------------------------------------- entries

@dataclass(frozen=True)
class ListEntry:
    """One released redescription as the list shows it (noisy values; NaN = not released)."""

    key: str
    run_id: str
    run: str
    red_id: int
    left: str
    right: str
    support: float
    jaccard: float
    pvalue: float
    length: int
    left_attributes: tuple[str, ...]
    right_attributes: tuple[str, ...]
    cells: tuple[float, float, float, float]
    constraints: tuple[Constraints, Constraints] = field(repr=False, compare=False,
                                                         default=({}, {}))

    @property
    def attributes(self) -> tuple[str, ...]:
        """Every attribute either query uses, sorted."""
        return tuple(sorted(set(self.left_attributes) | set(self.right_attributes)))


def list_entries(results: Iterable[RunResult],
                 run_labels: Mapping[str, str] | None = None) -> list[ListEntry]:
    """One :class:`ListEntry` per released redescription of ``results`` (in run order)."""
    out = []
    for result in results:
        label = (run_labels or {}).get(result.run_id, result.run_id[:8])
        for red in result.redescriptions:
            cons = (query_constraints(result, red, 0), query_constraints(result, red, 1))
            out.append(ListEntry(
                key=entry_key(result.run_id, red.id), run_id=result.run_id, run=label,
                red_id=int(red.id), left=red.left.text, right=red.right.text,
                support=_num(red.support_both), jaccard=_num(red.jaccard),
                pvalue=_num(red.pvalue), length=_query_length(red),
                left_attributes=tuple(sorted(cons[0])),
                right_attributes=tuple(sorted(cons[1])),
                cells=contingency_cells(result, red), constraints=cons))
    return out


# --------------------------------------------------------------------------- filter

@dataclass(frozen=True)
class ListFilter:
    """What the list keeps. None / empty means "no condition".

    ``attributes``: every one of them must be used; ``search``: a case-insensitive part
    of some attribute's name; ``decisions``: a key of :data:`DECISION_VIEWS`. A bound on
    a statistic a run did not release (NaN) leaves that redescription out.
    """

    min_support: float | None = None
    min_jaccard: float | None = None
    max_pvalue: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    runs: tuple[str, ...] = ()
    attributes: tuple[str, ...] = ()
    search: str = ""
    decisions: str = "all"

    def __post_init__(self):
        if self.decisions not in DECISION_VIEWS:
            raise ParameterError(f"decisions must be one of {', '.join(DECISION_VIEWS)}; "
                                 f"got {self.decisions!r}")


def _decision_ok(view: str, decision: str | None) -> bool:
    if view == "all":
        return True
    if view == "not_rejected":
        return decision != "reject"
    if view == "undecided":
        return decision not in ("keep", "reject")
    return decision == view


def filter_entries(entries: Iterable[ListEntry], flt: ListFilter,
                   decisions: Mapping[str, str | None] | None = None) -> list[ListEntry]:
    """The entries ``flt`` keeps, in their order; ``decisions`` maps keys to keep/reject."""
    decisions = decisions or {}
    search = flt.search.strip().casefold()
    wanted = set(flt.attributes)
    runs = set(flt.runs)
    out = []
    for e in entries:
        if flt.min_support is not None and not e.support >= flt.min_support:
            continue
        if flt.min_jaccard is not None and not e.jaccard >= flt.min_jaccard:
            continue
        if flt.max_pvalue is not None and not e.pvalue <= flt.max_pvalue:
            continue
        if flt.min_length is not None and e.length < flt.min_length:
            continue
        if flt.max_length is not None and e.length > flt.max_length:
            continue
        if runs and e.run_id not in runs:
            continue
        if wanted and not wanted <= set(e.attributes):
            continue
        if search and not any(search in a.casefold() for a in e.attributes):
            continue
        if not _decision_ok(flt.decisions, decisions.get(e.key)):
            continue
        out.append(e)
    return out


# --------------------------------------------------------------------------- sort

def sort_entries(entries: Iterable[ListEntry], by: str = "jaccard",
                 descending: bool = True) -> list[ListEntry]:
    """``entries`` sorted by ``by`` (a key of :data:`SORT_KEYS`); NaN always last, ties by key."""
    if by not in SORT_KEYS:
        raise ParameterError(f"sort key must be one of {', '.join(SORT_KEYS)}; got {by!r}")
    items = list(entries)

    def value(e: ListEntry):
        if by == "run":
            return e.run
        if by == "attributes":
            return ", ".join(e.attributes)
        return float(getattr(e, by))

    def missing(e: ListEntry) -> bool:
        v = value(e)
        return isinstance(v, float) and math.isnan(v)

    present = sorted((e for e in items if not missing(e)), key=lambda e: e.key)
    present.sort(key=value, reverse=descending)        # stable: ties stay in key order
    absent = sorted((e for e in items if missing(e)), key=lambda e: e.key)
    return present + absent


# --------------------------------------------------------------------------- near-duplicates

def near_duplicates(a: ListEntry, b: ListEntry) -> bool:
    """Whether ``a`` and ``b`` are near-duplicates: the same attributes on each side, and on
    every attribute overlapping constraints (numeric intervals that intersect, or value
    sets that share a value; "any value" overlaps everything)."""
    for ca, cb in zip(a.constraints, b.constraints):
        if set(ca) != set(cb):
            return False
        if not all(_overlap(ca[k], cb[k]) for k in ca):
            return False
    return True


@dataclass(frozen=True)
class Group:
    """Near-duplicate redescriptions shown as one row: ``best`` (highest noisy J, then noisy
    support) and all ``members`` (``best`` included)."""

    best: ListEntry
    members: tuple[ListEntry, ...]

    @property
    def count(self) -> int:
        return len(self.members)


def _rank(e: ListEntry) -> tuple:
    j = e.jaccard if math.isfinite(e.jaccard) else -math.inf
    s = e.support if math.isfinite(e.support) else -math.inf
    return (-j, -s, e.key)


def collapse_near_duplicates(entries: Iterable[ListEntry]) -> list[Group]:
    """Groups of near-duplicates (connected by :func:`near_duplicates`), in the order of
    their first member in ``entries``; every entry is in exactly one group."""
    items = list(entries)
    parent = list(range(len(items)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_signature: dict[tuple, list[int]] = {}
    for i, e in enumerate(items):
        by_signature.setdefault((frozenset(e.constraints[0]), frozenset(e.constraints[1])),
                                []).append(i)
    for members in by_signature.values():
        for x, i in enumerate(members):
            for j in members[x + 1:]:
                if find(i) != find(j) and near_duplicates(items[i], items[j]):
                    parent[find(j)] = find(i)
    groups: dict[int, list[ListEntry]] = {}
    for i, e in enumerate(items):
        groups.setdefault(find(i), []).append(e)
    return [Group(min(members, key=_rank), tuple(members)) for members in groups.values()]
