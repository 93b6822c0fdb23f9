"""Paid queries of the analyst's own: parse, validate, evaluate, release a noisy 4-cell table.

An analyst writes (or edits from a mined redescription) a query pair in the export's syntax
— the text :func:`dpcore.redescriptions.results.formula_text` writes, e.g.
``([DX_CHF] ∧ [SEX = F]) ∨ [DX_CKD]`` and ``[300 < LAB_BNP ≤ 800]`` — and receives, for one
ε, the noisy contingency table (|E11|, |E10|, |E01|, |E00|) of the pair and the statistics the
miners derive from it (noisy supports, Jaccard, "marg" p-value, as strict Serenade does).

What a query may name (checked from the public schema alone, before anything is charged):

* attributes of its own view, declared in the schema (the id column and undeclared columns
  are refused, naming them);
* numeric thresholds on the attribute's public split grid (:meth:`Schema.split_grid`): a
  threshold written with the 4 significant digits of the export matches the grid value it
  rounds to;
* categories declared for a categorical attribute; Booleans as ``[A]`` / ``¬[A]``.

Syntax (one side): literals in square brackets — ``[A]``, ``¬[A]`` (also ``![A]``, ``not
[A]``), ``[A = c]``, ``[A ≤ t]`` (``<=``), ``[A > t]``, ``[lo < A ≤ hi]`` — joined left to
right by ``∧`` (``&``, ``and``) or ``∨`` (``|``, ``or``). Where the operator changes, the part
before it is wrapped in parentheses, as the export writes it: ``([A] ∧ [B]) ∨ [C]``. A row with
a missing value satisfies no literal.

Privacy (``docs/PRIVACY.md`` §14): one row added or removed changes exactly one of the four
disjoint cells by one, so the table has L1 sensitivity 1 and one exact discrete Laplace draw
per cell with the whole ε is ε-DP; everything else is post-processing of those four numbers.
Strict mode only.
"""

from __future__ import annotations

import math
import re
import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import numpy as np

from dpcore import __version__
from dpcore.data.dataset import TwoViewDataset
from dpcore.data.schema import BOOLEAN, CATEGORICAL, NUMERIC, VIEW_KEYS, Attribute, Schema
from dpcore.errors import ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.mechanisms import noisy_counts
from dpcore.privacy.units import epsilon_to_nano
from dpcore.redescriptions.coding import MISSING, CodedView, code_view_strict
from dpcore.redescriptions.extract import _clip_stats, marg_pvalues
from dpcore.redescriptions.params import BudgetSlot
from dpcore.redescriptions.results import (
    AttributeTest,
    ExtractionRecord,
    OwnerDiagnostics,
    Redescription,
    RunResult,
    SerenadeQuery,
    TreeQuery,
    formula_text,
)
from dpcore.registry import CUSTOM_QUERY, STRICT

__all__ = ["HELP", "QUERY_TABLE_LABEL", "QueryError", "CustomQueryParams", "QueryTable",
           "plan_budget", "parse_query", "parse_pair", "check_query_run", "query_mask",
           "query_cells", "release_table", "table_statistics", "run_custom_query", "query_table",
           "editable_text", "drop_literal", "literal_texts", "grid_values"]

HELP = {
    "epsilon": "ε this query spends: one exact discrete Laplace draw per cell of its 4-cell "
               "table (|E11|, |E10|, |E01|, |E00|), each with scale 1/ε (rows).",
    "mode": "strict only: the query is checked against the public schema and every number "
            "released is ε-DP.",
    "left_query": "Left-view query in the export's syntax, e.g. ([A] ∧ [B = x]) ∨ [C > 2]; "
                  "only the schema's attributes and public grid thresholds.",
    "right_query": "Right-view query in the export's syntax, e.g. [300 < LAB_BNP ≤ 800].",
}

#: The accountant label of the 4-cell release; ends like Serenade's, so the pruning's
#: error estimate (:mod:`dpcore.redescriptions.pruning`) reads its ε and Δ.
QUERY_TABLE_LABEL = "custom query quality table"
#: Longest query text accepted (characters).
MAX_QUERY_CHARS = 4_000


class QueryError(ParameterError):
    """A query names something it may not, or cannot be read; nothing was charged."""


@dataclass(frozen=True)
class CustomQueryParams:
    """A paid query pair (strict mode only).

    Attributes
    ----------
    algorithm : str
        The registry key of the custom query.
    mode : str
        Strict only.
    epsilon : float
        ε of the 4-cell release (one ε for the whole table).
    left_query, right_query : str
        The two sides in the export's syntax (module docstring); validated against the
        dataset's public schema by :func:`check_query_run`, before the charge.
    edited_from : str
        Optional provenance, e.g. ``run 1a2b… redescription 3`` (public text).
    """

    algorithm: str = CUSTOM_QUERY
    mode: str = STRICT
    epsilon: float = 0.1
    left_query: str = ""
    right_query: str = ""
    edited_from: str = ""

    def validate(self) -> CustomQueryParams:
        """Check types and ranges that need no schema (raises ParameterError)."""
        if self.algorithm != type(self).algorithm:
            raise ParameterError(f"{type(self).__name__} is for {type(self).algorithm!r}; "
                                 f"got algorithm {self.algorithm!r}")
        if self.mode != STRICT:
            raise ParameterError(f"a paid query runs in strict mode only; got {self.mode!r}")
        eps = self.epsilon
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not math.isfinite(eps) \
                or eps <= 0:
            raise ParameterError(f"ε must be a positive number; got {eps!r}")
        for name in ("left_query", "right_query", "edited_from"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise ParameterError(f"{name} must be text; got {type(value).__name__}")
            if len(value) > MAX_QUERY_CHARS:
                raise ParameterError(f"{name} is longer than {MAX_QUERY_CHARS} characters")
        return self

    def to_dict(self) -> dict:
        """Plain dict of every field (what the ledger records with the charge)."""
        return asdict(self)


def plan_budget(params: CustomQueryParams) -> list[BudgetSlot]:
    """One slot: the whole ε pays the 4-cell table (disjoint cells, sensitivity 1)."""
    params.validate()
    return [BudgetSlot("quality", 0, epsilon_to_nano(params.epsilon))]


# --------------------------------------------------------------------------- parsing

_TOKEN = re.compile(r"\s*(?:(?P<lit>\[[^\[\]]*\])|(?P<not>¬|!|not\b)|(?P<and>∧|&&?|and\b)"
                    r"|(?P<or>∨|\|\|?|or\b)|(?P<open>\()|(?P<close>\)))", re.IGNORECASE)
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_INTERVAL = re.compile(rf"^\s*({_NUMBER})\s*<\s*(.+?)\s*(?:≤|<=)\s*({_NUMBER})\s*$")
_COMPARE = re.compile(r"^\s*(.+?)\s*(≤|<=|≥|>=|≠|!=|<|>|=)\s*(.+?)\s*$")


def grid_values(schema: Schema, attribute: Attribute) -> np.ndarray:
    """The public split thresholds of a numeric attribute (what a query may compare with)."""
    return schema.split_grid(attribute)


def _side_label(side: int, schema: Schema) -> str:
    return f"the {VIEW_KEYS[side]} query (view {schema.views[side].name!r})"


def _attribute(schema: Schema, side: int, name: str, where: str) -> Attribute:
    name = name.strip()
    for a in schema.attributes:
        if a.name == name:
            if a.view != side:
                raise QueryError(f"{where}: {name!r} is an attribute of the "
                                 f"{VIEW_KEYS[a.view]} view {schema.views[a.view].name!r}, "
                                 "not of this side")
            return a
    if schema.id_column is not None and name == schema.id_column:
        raise QueryError(f"{where}: {name!r} is the id column, not a public attribute; a "
                         "query may not name it")
    names = [a.name for a in schema.view_attributes(side)]
    known = ", ".join(names[:12]) + (f", … ({len(names)} in all)" if len(names) > 12 else "")
    raise QueryError(f"{where}: unknown attribute {name!r}; this view's attributes: {known}")


def _on_grid(schema: Schema, attr: Attribute, text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise QueryError(f"{where}: {text!r} is not a number (attribute {attr.name!r})") from None
    grid = grid_values(schema, attr)
    exact = np.flatnonzero(np.isclose(grid, value, rtol=1e-12, atol=0.0))
    if exact.size == 0:  # the export writes 4 significant digits
        exact = np.array([i for i, g in enumerate(grid) if f"{g:.4g}" == f"{value:.4g}"],
                         dtype=np.int64)
    if exact.size == 1:
        return float(grid[exact[0]])
    near = grid[np.argsort(np.abs(grid - value))[:2]] if grid.size else grid
    shown = ", ".join(f"{g:.6g}" for g in sorted(near))
    if exact.size > 1:
        raise QueryError(f"{where}: threshold {text} of {attr.name!r} matches several grid "
                         f"values ({shown}); write more digits")
    raise QueryError(f"{where}: threshold {text} of {attr.name!r} is not on its public grid "
                     f"(nearest grid values: {shown}); only grid thresholds may be used")


def _literal(schema: Schema, side: int, body: str, negated: bool, where: str) -> AttributeTest:
    m = _INTERVAL.match(body)
    if m and not negated:
        attr = _attribute(schema, side, m.group(2), where)
        if attr.type != NUMERIC:
            raise QueryError(f"{where}: an interval needs a numeric attribute; {attr.name!r} "
                             f"is {attr.type}")
        low, high = (_on_grid(schema, attr, m.group(i), where) for i in (1, 3))
        if not low < high:
            raise QueryError(f"{where}: empty interval {m.group(1)} < {attr.name} ≤ "
                             f"{m.group(3)}")
        return AttributeTest(attr.name, "interval", low=low, high=high)
    m = _COMPARE.match(body)
    if m is None:
        attr = _attribute(schema, side, body, where)
        if attr.type != BOOLEAN:
            raise QueryError(f"{where}: [{attr.name}] tests a Boolean; {attr.name!r} is "
                             f"{attr.type} (write e.g. "
                             + ("[A = category]" if attr.type == CATEGORICAL else "[A ≤ t]")
                             + ")")
        return AttributeTest(attr.name, "is", value=not negated)
    if negated:
        raise QueryError(f"{where}: ¬ applies to Boolean literals only ([A]); write the "
                         "complementary test instead")
    name, op, rhs = m.groups()
    attr = _attribute(schema, side, name, where)
    if op in ("≥", ">=", "<"):
        raise QueryError(f"{where}: {op!r} is not a grid test; use ≤ or > (a row with value x "
                         "is in [A ≤ t] when x ≤ t)")
    if op in ("≠", "!="):
        raise QueryError(f"{where}: '≠' is not a literal of this syntax; join the other "
                         f"categories of {attr.name!r} with ∨")
    if op == "=":
        if attr.type != CATEGORICAL:
            raise QueryError(f"{where}: [A = value] needs a categorical attribute; "
                             f"{attr.name!r} is {attr.type}")
        value = rhs.strip()
        if value not in attr.categories:
            raise QueryError(f"{where}: {value!r} is not a declared category of {attr.name!r} "
                             f"({', '.join(attr.categories)})")
        return AttributeTest(attr.name, "equals", value=value)
    if attr.type != NUMERIC:
        raise QueryError(f"{where}: {op} needs a numeric attribute; {attr.name!r} is "
                         f"{attr.type}")
    t = _on_grid(schema, attr, rhs, where)
    if op in ("≤", "<="):
        return AttributeTest(attr.name, "interval", low=None, high=t)
    return AttributeTest(attr.name, "interval", low=t, high=None)


def _tokens(text: str, where: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            rest = text[pos:].strip()
            raise QueryError(f"{where}: cannot read {rest[:40]!r}; literals go in square "
                             "brackets, joined by ∧ or ∨")
        out.append((m.lastgroup, m.group(m.lastgroup)))
        pos = m.end()
    return out


def parse_query(schema: Schema, text: str, side: int) -> SerenadeQuery:
    """Read one side of a query pair, checked against the public schema (no data read).

    Parameters
    ----------
    schema : Schema
        The dataset's public schema.
    text : str
        The query in the export's syntax (module docstring).
    side : int
        0 = left view, 1 = right view.

    Returns
    -------
    SerenadeQuery
        Literal tests and ∧/∨ operators, left to right; its ``text`` is the canonical form.

    Raises
    ------
    QueryError
        Naming what is wrong: an unknown attribute, one of the other view, the id column, a
        threshold not on the grid, an undeclared category, an unreadable or ambiguous text.
    """
    where = _side_label(side, schema)
    if not isinstance(text, str) or not text.strip():
        raise QueryError(f"{where} is empty")
    tokens = _tokens(text, where)
    tests: list[AttributeTest] = []
    ops: list[str] = []
    stack: list[str | None] = [None]  # the operator of each open group
    expect_operand, negated, i = True, False, 0
    depth_first = [True]  # whether the current group is still at its first operand
    while i < len(tokens):
        kind, value = tokens[i]
        if expect_operand:
            if kind == "not":
                negated = not negated
            elif kind == "open":
                if not depth_first[-1] or negated:
                    raise QueryError(f"{where}: a parenthesised group may only open the "
                                     "query (the export writes queries left to right: "
                                     "([A] ∧ [B]) ∨ [C])")
                stack.append(None)
                depth_first.append(True)
            elif kind == "lit":
                tests.append(_literal(schema, side, value[1:-1], negated, where))
                negated, expect_operand = False, False
                depth_first[-1] = False
            else:
                raise QueryError(f"{where}: expected a literal [..] where {value!r} stands")
        else:
            if kind in ("and", "or"):
                op = kind
                if stack[-1] is not None and stack[-1] != op:
                    raise QueryError(f"{where}: mixes ∧ and ∨ without parentheses; write "
                                     "the part before the change in parentheses, e.g. "
                                     "([A] ∧ [B]) ∨ [C]")
                stack[-1] = op
                ops.append(op)
                expect_operand = True
            elif kind == "close":
                if len(stack) == 1:
                    raise QueryError(f"{where}: a ')' closes nothing")
                stack.pop()
                depth_first.pop()
                depth_first[-1] = False
            else:
                raise QueryError(f"{where}: expected ∧, ∨ or ')' where {value!r} stands")
        i += 1
    if expect_operand:
        raise QueryError(f"{where}: ends where a literal [..] is expected")
    if len(stack) != 1:
        raise QueryError(f"{where}: a '(' is not closed")
    return SerenadeQuery(side, formula_text(tests, tuple(ops)), tuple(tests), tuple(ops))


def parse_pair(schema: Schema, left: str, right: str) -> tuple[SerenadeQuery, SerenadeQuery]:
    """Both sides, checked (:func:`parse_query`); raises QueryError naming the side."""
    return parse_query(schema, left, 0), parse_query(schema, right, 1)


def check_query_run(data: TwoViewDataset, params: CustomQueryParams) -> None:
    """Pre-charge check of the run path: the pair must parse against the public schema."""
    params.validate()
    parse_pair(data.schema, params.left_query, params.right_query)


# --------------------------------------------------------------------------- evaluation

def _test_mask(coded: CodedView, test: AttributeTest) -> np.ndarray:
    """Rows satisfying one literal, on the strict coding (``x ≤ t_j ⇔ code ≤ j``)."""
    names = [a.name for a in coded.view.attributes]
    a = names.index(test.attribute)
    codes = coded.codes[a]
    present = codes != MISSING
    attr = coded.view.attributes[a]
    if test.kind == "is":
        return present & (codes == (1 if test.value else 0))
    if test.kind == "equals":
        return present & (codes == attr.categories.index(test.value))
    grid = coded.thresholds[a]
    out = present.copy()
    if test.low is not None:
        out &= codes > int(np.searchsorted(grid, test.low))
    if test.high is not None:
        out &= codes <= int(np.searchsorted(grid, test.high))
    return out


def query_mask(coded: CodedView, query: SerenadeQuery) -> np.ndarray:
    """Rows satisfying ``query`` (bool, private: true data), literals left to right."""
    out = _test_mask(coded, query.tests[0])
    for test, op in zip(query.tests[1:], query.operators):
        m = _test_mask(coded, test)
        out = out & m if op == "and" else out | m
    return out


def query_cells(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """True [|E11|, |E10|, |E01|, |E00|] of two row masks (private)."""
    e11 = int(np.count_nonzero(left & right))
    e10 = int(np.count_nonzero(left)) - e11
    e01 = int(np.count_nonzero(right)) - e11
    return np.array([e11, e10, e01, left.size - e11 - e10 - e01], dtype=np.int64)


@dataclass(frozen=True)
class QueryTable:
    """A released 4-cell table and what follows from it (all DP post-processing).

    ``cells`` are the raw noisy counts (may be negative); the statistics use them clipped at
    0, exactly as strict Serenade's quality measurement does.
    """

    cells: tuple[float, float, float, float]
    support_left: float
    support_right: float
    support_both: float
    jaccard: float
    pvalue: float
    n: float


def release_table(cells: np.ndarray, epsilon_nano: int, *, rng: np.random.Generator,
                  accountant: PrivacyAccountant) -> np.ndarray:
    """The ε-DP release of a true 4-cell table: exact discrete Laplace, Δ = 1, one ε.

    Charges ``accountant`` ``epsilon_nano`` before drawing (one row changes one cell by one).
    Returns float64 noisy counts (may be negative).
    """
    return noisy_counts(np.asarray(cells, dtype=np.int64), kind="discrete", sensitivity=1,
                        epsilon_nano=epsilon_nano, rng=rng, accountant=accountant,
                        label=QUERY_TABLE_LABEL, parallel=4)


def table_statistics(noisy: np.ndarray) -> QueryTable:
    """Supports, Jaccard and p-value from a noisy 4-cell table (as strict Serenade)."""
    raw = tuple(float(x) for x in noisy)
    clipped = np.maximum(np.asarray(noisy, dtype=np.float64), 0.0)
    n = float(clipped.sum())
    ql, qr, e11, jac = _clip_stats(clipped[0] + clipped[1], clipped[0] + clipped[2],
                                   clipped[0], n)
    pval = float(marg_pvalues(ql, qr, e11, n))
    return QueryTable(raw, float(ql), float(qr), float(e11), float(jac), pval, n)


def run_custom_query(data: TwoViewDataset, params: CustomQueryParams, *,
                     rng: np.random.Generator, accountant: PrivacyAccountant,
                     run_id: str | None = None, seed: int | None = None,
                     progress=None) -> RunResult:
    """The registry's miner: release the pair's noisy 4-cell table (charged before noise).

    Returns a :class:`RunResult` like a mined run's: one redescription (Serenade-style
    queries, ``extraction`` −1) with the noisy statistics, and the 4-cell table kept as an
    extraction record ``((E11, E10), (E01, E00))`` with its sums as marginals.
    """
    left, right = parse_pair(data.schema, params.left_query, params.right_query)
    coded = (code_view_strict(data.schema, data.views[0]),
             code_view_strict(data.schema, data.views[1]))
    cells = query_cells(query_mask(coded[0], left), query_mask(coded[1], right))
    noisy = release_table(cells, plan_budget(params)[0].epsilon_nano, rng=rng,
                          accountant=accountant)
    table = table_statistics(noisy)
    red = Redescription(0, left, right, table.support_left, table.support_right,
                        table.support_both, table.jaccard, table.pvalue, 0, 0, -1)
    e11, e10, e01, e00 = table.cells
    record = ExtractionRecord(0, -1, -1, 0, 0, ((e11, e10), (e01, e00)),
                              (e11 + e10, e01 + e00), (e11 + e01, e10 + e00), table.n)
    if progress:
        progress(1.0, "custom query: noisy table released")
    return RunResult(run_id=run_id or uuid.uuid4().hex, dataset=data.schema.name,
                     algorithm=params.algorithm, mode=params.mode, params=params.to_dict(),
                     version=__version__, created_at=datetime.now(UTC).isoformat(),
                     epsilon_nano=accountant.spent_nano, redescriptions=[red], trees=[],
                     extractions=[record], mechanism_calls=accountant.to_records(), seed=seed,
                     diagnostics=OwnerDiagnostics())


def query_table(result: RunResult) -> QueryTable:
    """The released 4-cell table of a stored custom-query result (0 ε: a release)."""
    record = result.extractions[0]
    (e11, e10), (e01, e00) = record.noisy_table
    return table_statistics(np.array([e11, e10, e01, e00], dtype=np.float64))


# --------------------------------------------------------------------------- editing

def literal_texts(query) -> list[str]:
    """The readable literals of a query with literal tests (for "drop this literal")."""
    return [t.text() for t in query.tests]


def drop_literal(query: SerenadeQuery, index: int) -> str:
    """The query's text without literal ``index`` (the operator joining it goes too)."""
    if not 0 <= index < len(query.tests) or len(query.tests) < 2:
        raise QueryError("a query keeps at least one literal; pick one of "
                         f"{len(query.tests)} to drop")
    tests = list(query.tests)
    ops = list(query.operators)
    del tests[index]
    del ops[max(index - 1, 0)]
    return formula_text(tests, tuple(ops))


def _condition_test(cond) -> AttributeTest | None:
    if cond.op == "is":
        return AttributeTest(cond.attribute, "is", value=bool(cond.value))
    if cond.op == "=":
        return AttributeTest(cond.attribute, "equals", value=cond.value)
    if cond.op == "<=":
        return AttributeTest(cond.attribute, "interval", high=float(cond.value))
    if cond.op == ">":
        return AttributeTest(cond.attribute, "interval", low=float(cond.value))
    return None


def _merge(tests: list[AttributeTest]) -> list[AttributeTest]:
    """Two one-sided intervals on one attribute become one interval (as the text shows)."""
    out: list[AttributeTest] = []
    for t in tests:
        same = next((i for i, o in enumerate(out) if o.attribute == t.attribute
                     and o.kind == t.kind == "interval"), None)
        if same is None:
            out.append(t)
            continue
        o = out[same]
        lows = [x for x in (o.low, t.low) if x is not None]
        highs = [x for x in (o.high, t.high) if x is not None]
        out[same] = AttributeTest(t.attribute, "interval", low=max(lows) if lows else None,
                                  high=min(highs) if highs else None)
    return out


def editable_text(result: RunResult, query) -> str | None:
    """A mined query as text of this syntax, to edit and pay for again (0 ε: a release).

    Literal-test queries are their own text. A tree query (a disjunction of leaves, each a
    conjunction of path tests; a negated leaf is the union of the other leaves) is written
    as ``(t1 ∧ t2) ∨ [t3] ∨ …``; it has a left-to-right form only when at most its first
    leaf has several tests and no test is a '≠' — None otherwise (write it by hand).
    """
    if not isinstance(query, TreeQuery):
        return query.text
    tree = result.trees[query.tree]
    leaves = sorted(set(query.leaves))
    conj = []
    for leaf in leaves:
        tests = [_condition_test(c) for c in tree.leaf_conditions[leaf]]
        if any(t is None for t in tests):
            return None
        conj.append(_merge(tests))
    if not conj or any(not c for c in conj):
        return None
    conj.sort(key=len, reverse=True)
    if any(len(c) > 1 for c in conj[1:]):
        return None
    tests = list(conj[0]) + [c[0] for c in conj[1:]]
    ops = ["and"] * (len(conj[0]) - 1) + ["or"] * (len(conj) - 1)
    return formula_text(tests, tuple(ops))
