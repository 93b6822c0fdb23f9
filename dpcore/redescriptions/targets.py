"""Initial targets (makeTarget, docs/ALGORITHMS.md §2.2): the classes the first tree predicts.

Choosing *which* attribute is data-independent (uniform over attributes, so a
view is picked with probability proportional to its attribute count). Turning a
numeric attribute into classes is where the modes differ:

* strict — equal-width bins over the declared public domain (``target_bins``);
* faithful — Freedman–Diaconis-like bins on the data (paper's code; NOT ε-DP),
  a value equal to a cut point in the bin below it, as in the authors' code.

Rows with a missing value form one extra class.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.schema import BOOLEAN, CATEGORICAL
from dpcore.registry import STRICT


@dataclass(frozen=True)
class Target:
    """An initial target: attribute (view, index), per-row classes (private), class count."""

    view: int
    attribute: int
    name: str
    classes: np.ndarray
    n_classes: int


def pick_attribute(dataset: TwoViewDataset, rng: np.random.Generator,
                   exclude: set | None = None) -> tuple[int, int]:
    """(view, attribute index) uniformly over all attributes not in ``exclude``
    (all attributes once every one has been used). Data-independent."""
    pool = [(v, a) for v in (0, 1) for a in range(dataset.views[v].n_attributes)]
    unused = [p for p in pool if not exclude or p not in exclude]
    choices = unused or pool
    return choices[int(rng.integers(0, len(choices)))]


def make_target(dataset: TwoViewDataset, view: int, attribute: int,
                mode: str) -> Target | None:
    """Classes of the chosen attribute; ``None`` when faithful binning gives h = 0."""
    attr = dataset.views[view].attributes[attribute]
    col = dataset.views[view].values[attribute]
    missing = np.isnan(col)
    if attr.type == BOOLEAN:
        classes, k = np.where(missing, 0, col).astype(np.int64), 2
    elif attr.type == CATEGORICAL:
        classes, k = np.where(missing, 0, col).astype(np.int64), len(attr.categories)
    elif mode == STRICT:
        edges = dataset.schema.target_edges(attr)
        classes = np.searchsorted(edges, np.where(missing, 0.0, col), side="left")
        k = edges.size + 1
    else:
        edges = faithful_bin_edges(col)
        if edges is None:
            return None
        classes = faithful_classes(edges, np.where(missing, 0.0, col))
        k = edges.size + 1
    classes = np.where(missing, k, classes).astype(np.int64)
    return Target(view, attribute, attr.name, classes, k + 1)


def faithful_classes(edges: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Bin of each value under the authors' code's rule (NOT ε-DP: the edges are data-derived).

    Bin 0 is ``value <= edges[0]``, bin i is ``edges[i-1] < value <= edges[i]`` and the last
    bin, ``edges.size``, is ``value > edges[-1]``: a value equal to a cut point falls in the
    bin below it (the cut points are data values, so every cut point has rows on it).

    Parameters
    ----------
    edges : ndarray of float64
        Increasing cut points (:func:`faithful_bin_edges`).
    values : ndarray of float64
        Non-missing attribute values (private), one per row.

    Returns
    -------
    ndarray of int64
        Bin index in ``[0, edges.size]`` per row.
    """
    return np.searchsorted(edges, values, side="left").astype(np.int64)


def faithful_bin_edges(col: np.ndarray) -> np.ndarray | None:
    """Freedman–Diaconis-like cut points of the paper's code (data-derived, NOT ε-DP).

    Distinct non-missing values of the first 92 % of rows; h = 2·IQR·N^(−0.33)
    with the IQR of those distinct values; walk the sorted values from the
    minimum, cutting whenever value − last cut > h. Returns ``None`` if h = 0.
    """
    n = col.size
    head = col[: int(0.92 * n)]
    vals = np.unique(head[~np.isnan(head)])
    if vals.size < 2:
        return None
    q1, q3 = np.percentile(vals, [25, 75])
    h = 2.0 * (q3 - q1) * n ** (-0.33)
    if h <= 0:
        return None
    cuts, last = [], vals[0]
    for v in vals[1:]:
        if v - last > h:
            cuts.append(v)
            last = v
    return np.asarray(cuts, dtype=np.float64)
