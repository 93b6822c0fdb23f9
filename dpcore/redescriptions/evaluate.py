"""True statistics of released redescriptions: OWNER / TEACHING ONLY, NOT private.

``evaluate`` reads the raw data to compute the true supports, Jaccard and
p-value of each redescription of a :class:`RunResult`. Its output must never
reach an analyst on a private dataset; the app shows it only to owners and on
``public_demo`` datasets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcore.data.dataset import TwoViewDataset
from dpcore.redescriptions.extract import marg_pvalues
from dpcore.redescriptions.results import (
    AttributeTest,
    Condition,
    RunResult,
    SerenadeQuery,
    TreeRecord,
)
from dpcore.registry import STRICT


@dataclass(frozen=True)
class TrueStatistics:
    """True (non-private) statistics of one redescription; supports in rows."""

    id: int
    support_left: int
    support_right: int
    support_both: int
    jaccard: float
    pvalue: float


def condition_mask(dataset: TwoViewDataset, view: int, condition: Condition) -> np.ndarray:
    """Rows satisfying one path test; a missing value satisfies no test."""
    attrs = dataset.views[view].attributes
    a = next(i for i, at in enumerate(attrs) if at.name == condition.attribute)
    col = dataset.views[view].values[a]
    present = ~np.isnan(col)
    if condition.op == "<=":
        return present & (col <= condition.value)
    if condition.op == ">":
        return present & (col > condition.value)
    if condition.op == "is":
        return present & (col == (1.0 if condition.value else 0.0))
    code = attrs[a].categories.index(condition.value)
    if condition.op == "=":
        return present & (col == code)
    return present & (col != code)


def leaf_masks(dataset: TwoViewDataset, tree: TreeRecord) -> np.ndarray:
    """Boolean matrix (leaves × rows): which rows reach each leaf of a released tree."""
    out = np.ones((tree.n_leaves, dataset.n_rows), dtype=bool)
    for leaf, conditions in enumerate(tree.leaf_conditions):
        for c in conditions:
            out[leaf] &= condition_mask(dataset, tree.view, c)
    return out


def test_mask(dataset: TwoViewDataset, view: int, test: AttributeTest) -> np.ndarray:
    """Rows satisfying one Serenade literal; a missing value satisfies no test."""
    attrs = dataset.views[view].attributes
    a = next(i for i, at in enumerate(attrs) if at.name == test.attribute)
    col = dataset.views[view].values[a]
    present = ~np.isnan(col)
    if test.kind == "is":
        return present & (col == (1.0 if test.value else 0.0))
    if test.kind == "equals":
        return present & (col == attrs[a].categories.index(test.value))
    out = present.copy()
    if test.low is not None:
        out &= col > test.low
    if test.high is not None:
        out &= col <= test.high
    return out


def serenade_query_mask(dataset: TwoViewDataset, query: SerenadeQuery) -> np.ndarray:
    """Rows satisfying a Serenade query, its tests combined left to right."""
    if not query.tests:
        return np.zeros(dataset.n_rows, dtype=bool)
    out = test_mask(dataset, query.side, query.tests[0])
    for test, op in zip(query.tests[1:], query.operators):
        m = test_mask(dataset, query.side, test)
        out = out & m if op == "and" else out | m
    return out


def marg_pvalue(support_left: float, support_right: float, support_both: float,
                n_rows: float) -> float:
    """P[X ≥ |E11|], X ~ Binomial(N, |qL|·|qR|/N²); 1 when |qL|·|qR| = 0."""
    return float(marg_pvalues(support_left, support_right, support_both, float(n_rows)))


def evaluate(result: RunResult, dataset: TwoViewDataset, *,
             as_released: bool = False) -> list[TrueStatistics]:
    """True supports, Jaccard and p-value of every redescription in ``result`` (NOT DP).

    Parameters
    ----------
    result : RunResult
        A released run.
    dataset : TwoViewDataset
        Its raw data (NOT private: the output is owner/teaching only).
    as_released : bool
        False (default): over all rows — how many rows really satisfy each query.
        True: over the population the release counts. A strict tree-miner run releases
        statistics of its extraction's leaf × leaf table, whose cells hold only rows that
        reach a leaf of *both* trees (a row with a missing value in a split attribute of
        the other tree is in no cell; docs/ALGORITHMS.md §11): its |qL|, |qR| and N are
        those rows' counts, and so is the truth here. Other runs (faithful tree runs, whose
        leaf sizes are noised separately, and Serenade) count all rows either way.
    """
    masks = {t.id: leaf_masks(dataset, t) for t in result.trees}
    strict_tree = as_released and result.mode == STRICT
    out = []
    for red in result.redescriptions:
        n = dataset.n_rows
        q = []
        for query in (red.left, red.right):
            if query.tree < 0:
                q.append(serenade_query_mask(dataset, query))
                continue
            m = masks[query.tree]
            q.append(m[list(query.leaves)].any(axis=0) if query.leaves else np.zeros(n, bool))
        left, right = q
        if strict_tree and red.left.tree >= 0 and red.right.tree >= 0:
            population = masks[red.left.tree].any(axis=0) & masks[red.right.tree].any(axis=0)
            left, right, n = left & population, right & population, int(population.sum())
        both = int(np.count_nonzero(left & right))
        union = int(np.count_nonzero(left | right))
        sl, sr = int(left.sum()), int(right.sum())
        out.append(TrueStatistics(red.id, sl, sr, both, both / union if union else 0.0,
                                  marg_pvalue(sl, sr, both, n)))
    return out
