"""Run results: what a mining run releases, plus owner-only diagnostics kept apart.

Everything in :class:`RunResult` except ``diagnostics`` is a DP release (or
public metadata such as parameters): tree structures chosen by a DP mechanism,
noisy counts, and statistics post-processed from those noisy counts.
``diagnostics`` (MCMC score traces) is computed from true data and is NOT
private: it is stored separately and shown to owners only.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field, fields

from dpcore.errors import DataError
from dpcore.family import Release
from dpcore.privacy.policy import NEIGHBOURING_RELATION

#: Values :func:`plain` returns as they are (immutable; ``dataclasses.asdict`` copies them
#: to themselves).
_ATOMS = frozenset({str, int, float, bool, type(None)})

#: Dataclass type → its field names (what ``dataclasses.fields`` returns, looked up once).
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def plain(obj):
    """``dataclasses.asdict`` of a result, built without its per-value generic dispatch.

    Equal to ``asdict`` on everything a result holds (dataclasses → dicts in field order,
    lists and tuples → their own type, named tuples rebuilt, dicts → dicts of their own
    type, any other value deep-copied; a ``defaultdict`` keeps its factory, where Python
    3.11's ``asdict`` fails), three to four times faster: on a cms_small result of about a
    hundred redescriptions ≈ 3 ms instead of ≈ 12 ms, paid when the run is stored and again
    when it is written (issue 19). Post-processing of a release only: nothing here reads data.

    Parameters
    ----------
    obj : dataclass instance or any value a result holds

    Returns
    -------
    A deep copy of ``obj`` with every dataclass replaced by the dict of its fields.
    """
    cls = type(obj)
    if cls in _ATOMS:
        return obj
    names = _FIELD_NAMES.get(cls)
    if names is None and hasattr(cls, "__dataclass_fields__"):
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    if names is not None:
        return {name: plain(getattr(obj, name)) for name in names}
    if cls is list:
        return [plain(v) for v in obj]
    if cls is tuple:
        return tuple(plain(v) for v in obj)
    if cls is dict:
        return {plain(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return cls(*[plain(v) for v in obj])
    if isinstance(obj, (list, tuple)):
        return cls(plain(v) for v in obj)
    if isinstance(obj, dict):
        if hasattr(cls, "default_factory"):
            out = cls(obj.default_factory)
            for k, v in obj.items():
                out[plain(k)] = plain(v)
            return out
        return cls((plain(k), plain(v)) for k, v in obj.items())
    return copy.deepcopy(obj)


@dataclass(frozen=True)
class Condition:
    """One test on a tree path: ``attribute op value``.

    ``op`` is ``"<="`` / ``">"`` (numeric), ``"="`` / ``"!="`` (categorical, value = label),
    ``"is"`` (Boolean, value = True/False).
    """

    attribute: str
    op: str
    value: float | str | bool

    def text(self) -> str:
        if self.op == "is":
            return f"[{self.attribute}]" if self.value else f"¬[{self.attribute}]"
        if self.op == "=":
            return f"[{self.attribute} = {self.value}]"
        if self.op == "!=":
            return f"[{self.attribute} ≠ {self.value}]"
        return f"[{self.attribute} {'≤' if self.op == '<=' else '>'} {_fmt(self.value)}]"


def _fmt(x: float) -> str:
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def conjunction_text(conditions: list[Condition]) -> str:
    """Readable conjunction; two numeric tests on one attribute become an interval."""
    if not conditions:
        return "⊤"
    parts, done = [], set()
    for i, c in enumerate(conditions):
        if i in done:
            continue
        if c.op in ("<=", ">"):
            same = [j for j, d in enumerate(conditions) if d.attribute == c.attribute
                    and d.op in ("<=", ">")]
            lows = [conditions[j].value for j in same if conditions[j].op == ">"]
            highs = [conditions[j].value for j in same if conditions[j].op == "<="]
            done.update(same)
            if lows and highs:
                parts.append(f"[{_fmt(max(lows))} < {c.attribute} ≤ {_fmt(min(highs))}]")
            elif lows:
                parts.append(f"[{c.attribute} > {_fmt(max(lows))}]")
            else:
                parts.append(f"[{c.attribute} ≤ {_fmt(min(highs))}]")
        else:
            parts.append(c.text())
    return " ∧ ".join(parts)


@dataclass(frozen=True)
class Literal:
    """A leaf of a tree (``negated=False``) or its negation (the union of the other leaves)."""

    leaf: int
    negated: bool = False


@dataclass(frozen=True)
class AttributeTest:
    """One literal of a Serenade query: a test on one attribute (public grid values).

    ``kind`` is ``"interval"`` (numeric: ``low < A ≤ high``, ``None`` = unbounded),
    ``"equals"`` (categorical: ``A = value``) or ``"is"`` (Boolean: ``A`` is ``value``).
    A row with a missing value satisfies no test.
    """

    attribute: str
    kind: str
    low: float | None = None
    high: float | None = None
    value: str | bool | None = None

    def text(self) -> str:
        if self.kind == "is":
            return f"[{self.attribute}]" if self.value else f"¬[{self.attribute}]"
        if self.kind == "equals":
            return f"[{self.attribute} = {self.value}]"
        if self.low is None:
            return f"[{self.attribute} ≤ {_fmt(self.high)}]"
        if self.high is None:
            return f"[{self.attribute} > {_fmt(self.low)}]"
        return f"[{_fmt(self.low)} < {self.attribute} ≤ {_fmt(self.high)}]"


def formula_text(tests, operators) -> str:
    """Left-to-right formula, e.g. ``([A] ∧ [B = x]) ∨ [C > 2]``."""
    if not tests:
        return "⊤"
    text = tests[0].text()
    for i, (test, op) in enumerate(zip(tests[1:], operators)):
        text = (f"({text})" if i > 0 and op != operators[i - 1] else text)
        text += (" ∧ " if op == "and" else " ∨ ") + test.text()
    return text


class _QueryType(type):
    """Calling :class:`Query` itself builds the query of the right family (format 1's fields)."""

    def __call__(cls, *args, **kwargs):
        if cls is Query:
            return query_of_fields(*args, **kwargs)
        return super().__call__(*args, **kwargs)


class Query(metaclass=_QueryType):
    """One side of a redescription, of either family: a :class:`TreeQuery` or a
    :class:`SerenadeQuery`.

    ``Query(side, tree, literals, leaves, text, tests=(), operators=())`` — the single
    query type of results format 1 — still builds one, by :func:`query_of_fields`.
    """

    __slots__ = ()


@dataclass(frozen=True)
class TreeQuery(Query):
    """One side of a tree miner's redescription: a disjunction of (negated) leaves of a tree.

    Attributes
    ----------
    side : int
        0 = left view, 1 = right view.
    tree : int
        Index into ``RunResult.trees``.
    literals : tuple of Literal
        The disjunction of (negated) leaves.
    leaves : tuple of int
        Leaf indices (0..m-1, the tree's leaf order) the query covers.
    text : str
        Readable form, e.g. ``[SP_CHF] ∨ ¬[SP_CNCR]``.
    """

    side: int
    tree: int
    literals: tuple[Literal, ...]
    leaves: tuple[int, ...]
    text: str

    @property
    def tests(self) -> tuple[AttributeTest, ...]:
        """No attribute tests (those are :class:`SerenadeQuery`'s)."""
        return ()

    @property
    def operators(self) -> tuple[str, ...]:
        """No operators (those are :class:`SerenadeQuery`'s)."""
        return ()


@dataclass(frozen=True)
class SerenadeQuery(Query):
    """One side of a Serenade redescription: attribute tests joined left to right.

    Attributes
    ----------
    side : int
        0 = left view, 1 = right view.
    text : str
        Readable form, e.g. ``([A] ∧ [B = x]) ∨ [C > 2]``.
    tests : tuple of AttributeTest
        The literals, combined left to right by ``operators``.
    operators : tuple of str
        ``"and"`` / ``"or"``, one fewer than ``tests``.
    """

    side: int
    text: str
    tests: tuple[AttributeTest, ...]
    operators: tuple[str, ...] = ()

    @property
    def tree(self) -> int:
        """−1: a Serenade query belongs to no tree."""
        return -1

    @property
    def literals(self) -> tuple[Literal, ...]:
        """No tree leaves (those are :class:`TreeQuery`'s)."""
        return ()

    @property
    def leaves(self) -> tuple[int, ...]:
        """No tree leaves (those are :class:`TreeQuery`'s)."""
        return ()


def query_of_fields(side: int, tree: int, literals=(), leaves=(), text: str = "", tests=(),
                    operators=()) -> TreeQuery | SerenadeQuery:
    """The query with format 1's fields: a Serenade query when it has attribute tests or
    belongs to no tree (``tree`` −1), else a tree query."""
    if tests or tree == -1:
        return SerenadeQuery(side, text, tuple(tests), tuple(operators))
    return TreeQuery(side, tree, tuple(literals), tuple(leaves), text)

#: Version of :meth:`RunResult.to_dict`'s own fields (key ``redescriptions_format``; the run
#: envelope around it, ``result_format``, is :mod:`dpcore.runs`'s). 1 (no key, version 0.2.0
#: and before): one query type with the fields of both families. 2: each query has its
#: family's fields only. :meth:`RunResult.from_dict` reads both.
REDESCRIPTIONS_FORMAT = 2


@dataclass(frozen=True)
class Redescription:
    """A released redescription with its noisy statistics (all DP post-processing).

    Supports are noisy row counts (may be fractional after noise); ``pvalue`` is
    the binomial "marg" p-value computed from the noisy counts. Serenade results
    have ``extraction = −1``; ``trial`` is the initial pair and ``step`` the number
    of extensions applied. Faithful Serenade releases only |E11| and
    |E10 ∪ E01|, so its ``support_left``, ``support_right`` and ``pvalue`` are NaN.
    """

    id: int
    left: Query
    right: Query
    support_left: float
    support_right: float
    support_both: float
    jaccard: float
    pvalue: float
    trial: int
    step: int
    extraction: int

    @property
    def text(self) -> str:
        return f"{self.left.text}  ⇔  {self.right.text}"


@dataclass(frozen=True)
class TreeNode:
    """A node of a released tree (structure only, no counts).

    ``branch`` is the test leading from the parent (None at the root); ``attribute``
    is the split attribute (None at a leaf); ``leaf`` is the leaf index or -1.
    """

    id: int
    parent: int
    depth: int
    attribute: str | None
    split_type: str | None
    threshold: float | None
    children: tuple[int, ...]
    branch: Condition | None
    leaf: int = -1


@dataclass(frozen=True)
class TreeRecord:
    """A released tree: structure chosen by a DP mechanism, and each leaf's query."""

    id: int
    view: int
    trial: int
    step: int
    nodes: tuple[TreeNode, ...]
    leaf_conditions: tuple[tuple[Condition, ...], ...]

    @property
    def n_leaves(self) -> int:
        return len(self.leaf_conditions)

    def leaf_text(self, leaf: int) -> str:
        return conjunction_text(list(self.leaf_conditions[leaf]))


@dataclass(frozen=True)
class ExtractionRecord:
    """The noisy counts one extractReds call released (the diagram's line widths).

    ``noisy_table[i][j]`` ≈ |A_i ∩ B_j| (left leaf i, right leaf j). Strict mode
    derives the marginals and ``noisy_n`` by summing the table; faithful mode
    releases separately noised marginals.
    """

    id: int
    left_tree: int
    right_tree: int
    trial: int
    step: int
    noisy_table: tuple[tuple[float, ...], ...]
    noisy_left: tuple[float, ...]
    noisy_right: tuple[float, ...]
    noisy_n: float


@dataclass
class OwnerDiagnostics:
    """NOT differentially private: computed from true data. Owners only.

    ``score_traces`` maps a label (``"trial 0 / tree pair"``) to the chain's
    score after each iteration (at most 2,000 points, evenly thinned).
    ``phase_seconds`` (prepare / trees / extract), ``mcmc_iterations`` and
    ``mcmc_rows_touched`` (rows reaching the changed node, summed over
    iterations) describe the run's cost; they reveal the row count.
    """

    score_traces: dict[str, list[float]] = field(default_factory=dict)
    phase_seconds: dict[str, float] = field(default_factory=dict)
    mcmc_iterations: int = 0
    mcmc_rows_touched: int = 0


@dataclass
class RunResult(Release):
    """Everything one mining run released, with its provenance.

    ``seed`` is only set on public demo data (runs on private data draw fresh
    OS entropy and record no seed). ``mechanism_calls`` lists every (ε, Δ)
    spent, in nano-ε. ``neighbouring`` states the neighbouring relation the ε
    refers to; ``audience`` who may read the result (``owner`` for faithful
    runs on private data, see :mod:`dpcore.privacy.policy`).
    """

    run_id: str
    dataset: str
    algorithm: str
    mode: str
    params: dict
    version: str
    created_at: str
    epsilon_nano: int
    redescriptions: list[Redescription]
    trees: list[TreeRecord]
    extractions: list[ExtractionRecord]
    mechanism_calls: list[dict]
    seed: int | None = None
    diagnostics: OwnerDiagnostics = field(default_factory=OwnerDiagnostics)
    neighbouring: str = NEIGHBOURING_RELATION
    audience: str = "everyone"
    #: charged / spent / returned nano-ε (:class:`~dpcore.privacy.accountant.RunBudget`),
    #: set by the executor; ``epsilon_nano`` above is what the mechanisms spent.
    budget: dict | None = None
    #: The 90 % intervals of every released statistic as computed when the run was stored
    #: (:func:`dpcore.redescriptions.intervals.intervals_document` plus the ids of the
    #: stable pairs; 0 ε), read back instead of recomputed; None in results stored before.
    stored_intervals: dict | None = None

    @property
    def epsilon(self) -> float:
        return self.epsilon_nano / 10**9

    def attach_intervals(self) -> None:
        """Store the intervals with the result (:meth:`dpcore.family.Release.attach_intervals`)."""
        from dpcore.redescriptions.intervals import stored_intervals_document

        self.stored_intervals = stored_intervals_document(self)

    def to_dict(self, include_diagnostics: bool = False) -> dict:
        """Plain dict in format :data:`REDESCRIPTIONS_FORMAT`; diagnostics (non-private) only
        when asked for."""
        data = {"redescriptions_format": REDESCRIPTIONS_FORMAT, **plain(self)}
        if not include_diagnostics:
            data.pop("diagnostics")
        # a custom query's table and a map's cells with their 90 % intervals (0 ε: from the
        # release and its recorded scale); absent for mined runs
        from dpcore.redescriptions.query_intervals import result_intervals

        bounds = result_intervals(self)
        if bounds is not None:
            data["query_intervals"] = bounds
        return data

    def to_json(self, include_diagnostics: bool = False) -> str:
        return json.dumps(self.to_dict(include_diagnostics), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict) -> RunResult:
        """Read a result of any stored format (see :data:`REDESCRIPTIONS_FORMAT`)."""
        d = dict(data)
        d.pop("intervals", None)  # added by exports (post-processing), not a stored field
        version = d.pop("redescriptions_format", 1)
        if version not in (1, REDESCRIPTIONS_FORMAT):
            raise DataError(f"this redescription result has format {version!r}; this version "
                            f"of dpcore reads formats 1 to {REDESCRIPTIONS_FORMAT}")
        d.pop("query_intervals", None)  # derived by to_dict, not a stored field
        d["trees"] = [_tree_from_dict(t) for t in d["trees"]]
        d["extractions"] = [ExtractionRecord(**{**e, "noisy_table": tuple(tuple(r) for r in
                                                e["noisy_table"]),
                                                "noisy_left": tuple(e["noisy_left"]),
                                                "noisy_right": tuple(e["noisy_right"])})
                            for e in d["extractions"]]
        d["redescriptions"] = [_red_from_dict(r) for r in d["redescriptions"]]
        d["diagnostics"] = OwnerDiagnostics(**d.get("diagnostics", {}) or {})
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> RunResult:
        return cls.from_dict(json.loads(text))


def _cond(d: dict | None) -> Condition | None:
    return None if d is None else Condition(d["attribute"], d["op"], d["value"])


def _tree_from_dict(t: dict) -> TreeRecord:
    nodes = tuple(TreeNode(**{**n, "children": tuple(n["children"]),
                              "branch": _cond(n["branch"])}) for n in t["nodes"])
    leaf_conditions = tuple(tuple(_cond(c) for c in leaf) for leaf in t["leaf_conditions"])
    return TreeRecord(t["id"], t["view"], t["trial"], t["step"], nodes, leaf_conditions)


def _query_from_dict(q: dict) -> Query:
    """A query of either format: Serenade queries have attribute tests (format 1 also
    stored ``tree`` −1 and empty leaves with them); tree queries have a tree's leaves."""
    tests = tuple(AttributeTest(**t) for t in q.get("tests", ()))
    if "literals" not in q:  # format 2, Serenade
        return SerenadeQuery(q["side"], q["text"], tests, tuple(q.get("operators", ())))
    return query_of_fields(q["side"], q["tree"], tuple(Literal(**lit) for lit in q["literals"]),
                           tuple(q["leaves"]), q["text"], tests, tuple(q.get("operators", ())))


def _red_from_dict(r: dict) -> Redescription:
    return Redescription(**{**r, "left": _query_from_dict(r["left"]),
                            "right": _query_from_dict(r["right"])})
