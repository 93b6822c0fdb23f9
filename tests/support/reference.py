"""Naive pure-NumPy/Python reference implementations for the tree kernels, written from
docs/ALGORITHMS.md §2, not from dpcore.redescriptions.kernels, plus small random-dataset builders.

Everything here works on RAW values (the float arrays of ``ViewData.values``: NaN =
missing, Boolean 0/1, categorical codes) and on the public description of a split
candidate (attribute, kind, threshold index, child count). It never calls a numba kernel,
so a kernel bug cannot hide behind the same bug here.

Routing rules (docs/ALGORITHMS.md §1–2.1 and coding.py's documented candidate kinds):

* numeric ``A ≤ t`` → child 0, ``A > t`` → child 1 (t = the candidate's real threshold);
* Boolean: false → child 0, true → child 1;
* categorical with ≤ 4 categories: one child per category (child = category code);
* categorical with more: one-vs-rest, child 1 = "A = category", child 0 = "A ≠ category";
* a missing value in the split attribute: the row reaches no child (−1).

Seeds: every test derives its generator from ``BASE_SEED`` (default below, override with
the environment variable ``DPRM_TEST_SEED``); ``SEED_MSG`` goes into assertion messages.
"""

from __future__ import annotations

import os
import zlib

import numpy as np

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.schema import BOOLEAN, CATEGORICAL, NUMERIC, Attribute, Schema, ViewSpec

DEFAULT_SEED = 20240611
BASE_SEED = int(os.environ.get("DPRM_TEST_SEED", DEFAULT_SEED))
SEED_MSG = f"(DPRM_TEST_SEED={BASE_SEED}; rerun with the same value to reproduce)"

# Constants of the flat tree layout that the tests must know to read ``nodes``
# (documented in kernels.py's module docstring; restated here, not imported).
SPLIT, START, END, KEPT = 0, 1, 2, 3
LEAF, ABSENT, GROW = -1, -2, -3
THRESHOLD, MULTIWAY, EQUALS = 0, 1, 2


def make_rng(name: str, extra: int = 0) -> np.random.Generator:
    """A generator per test, derived from the base seed and a stable name."""
    return np.random.default_rng([BASE_SEED, zlib.crc32(name.encode()), int(extra)])


# ---------------------------------------------------------------------------
# Random datasets
# ---------------------------------------------------------------------------

def make_schema(grid_bins: int = 8) -> Schema:
    """Two views mixing numeric, Boolean, a ≤4-category (multiway) and a >4-category
    (one-vs-rest) categorical attribute on each side."""
    L, R = 0, 1
    attrs = (
        Attribute("L_num", L, NUMERIC, domain=(0.0, 10.0)),
        Attribute("L_bool", L, BOOLEAN),
        Attribute("L_cat3", L, CATEGORICAL, categories=("a", "b", "c")),
        Attribute("L_cat6", L, CATEGORICAL, categories=tuple("uvwxyz")),
        Attribute("L_num2", L, NUMERIC, domain=(-5.0, 5.0), thresholds=(-2.0, 0.0, 0.5, 3.0)),
        Attribute("R_num", R, NUMERIC, domain=(0.0, 100.0)),
        Attribute("R_cat4", R, CATEGORICAL, categories=("p", "q", "r", "s")),
        Attribute("R_bool", R, BOOLEAN),
        Attribute("R_cat7", R, CATEGORICAL, categories=tuple("ABCDEFG")),
        Attribute("R_bool2", R, BOOLEAN),
    )
    return Schema(name="kernel-tests", attributes=attrs,
                  views=(ViewSpec("left"), ViewSpec("right")), grid_bins=grid_bins,
                  target_bins=4)


def random_column(attr: Attribute, schema: Schema, n: int, rng: np.random.Generator,
                  missing: float) -> np.ndarray:
    """Random raw values for one attribute; a share of numeric values sits exactly on
    public grid thresholds and on the domain ends (boundary cases of ``≤``)."""
    if attr.type == BOOLEAN:
        col = rng.integers(0, 2, n).astype(np.float64)
    elif attr.type == CATEGORICAL:
        k = len(attr.categories)
        p = rng.dirichlet(np.ones(k))
        col = rng.choice(k, size=n, p=p).astype(np.float64)
    else:
        lo, hi = attr.domain
        col = rng.uniform(lo, hi, n)
        on_grid = rng.random(n) < 0.25
        pool = np.concatenate([schema.split_grid(attr), [lo, hi]])
        col[on_grid] = rng.choice(pool, size=int(on_grid.sum()))
        # a few repeated values (ties) for the faithful coding
        rep = rng.random(n) < 0.1
        col[rep] = np.round(col[rep])
        col = np.clip(col, lo, hi)
    col[rng.random(n) < missing] = np.nan
    return col


def random_arrays(schema: Schema, n: int, rng: np.random.Generator,
                  missing: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    out = []
    for v in (0, 1):
        attrs = schema.view_attributes(v)
        out.append(np.stack([random_column(a, schema, n, rng, missing) for a in attrs]))
    return out[0], out[1]


def random_dataset(n: int, rng: np.random.Generator, missing: float = 0.1,
                   grid_bins: int = 8) -> TwoViewDataset:
    schema = make_schema(grid_bins)
    left, right = random_arrays(schema, n, rng, missing)
    return TwoViewDataset.from_arrays(schema, left, right)


def random_classes(n: int, n_classes: int, rng: np.random.Generator,
                   raw: np.ndarray | None = None) -> np.ndarray:
    """Row classes in [0, n_classes); when ``raw`` (one view's values) is given the
    classes are noisily correlated with its first rows so that splits matter."""
    y = rng.integers(0, n_classes, n)
    if raw is not None:
        signal = np.nan_to_num(raw[0], nan=0.0)
        ranks = np.argsort(np.argsort(signal, kind="stable"), kind="stable")
        informed = (ranks * n_classes) // max(n, 1)
        use = rng.random(n) < 0.6
        y = np.where(use, informed, y)
    return np.ascontiguousarray(y.astype(np.int64))


# ---------------------------------------------------------------------------
# Candidate routing on raw values
# ---------------------------------------------------------------------------

def candidate_info(coded, s: int) -> tuple[int, int, int, int, float | None]:
    """(attribute, kind, threshold index, n_children, real threshold or None)."""
    a = int(coded.cand_attr[s])
    kind = int(coded.cand_kind[s])
    j = int(coded.cand_thr[s])
    nch = int(coded.cand_nchild[s])
    attr = coded.view.attributes[a]
    real = float(coded.thresholds[a][j]) if attr.type == NUMERIC else None
    return a, kind, j, nch, real


def naive_child(coded, s: int, x: float) -> int:
    """The child of raw value ``x`` under candidate ``s`` (−1 when ``x`` is missing)."""
    a, kind, j, nch, real = candidate_info(coded, s)
    if np.isnan(x):
        return -1
    attr = coded.view.attributes[a]
    if attr.type == NUMERIC:
        return 0 if x <= real else 1
    if attr.type == BOOLEAN:
        return 1 if x == 1.0 else 0
    code = int(x)
    if len(attr.categories) <= 4:
        assert kind == MULTIWAY and nch == len(attr.categories)
        return code
    assert kind == EQUALS and nch == 2
    return 1 if code == j else 0


def naive_child_column(coded, s: int, raw: np.ndarray) -> np.ndarray:
    """The child of every row of a view under candidate ``s`` (vectorised NumPy version of
    :func:`naive_child` on raw values, attributes × rows)."""
    a, kind, j, nch, real = candidate_info(coded, s)
    attr = coded.view.attributes[a]
    x = raw[a]
    missing = np.isnan(x)
    if attr.type == NUMERIC:
        out = np.where(x <= real, 0, 1)
    elif attr.type == BOOLEAN:
        out = np.where(x == 1.0, 1, 0)
    elif len(attr.categories) <= 4:
        out = np.where(missing, 0, x).astype(np.int64)
    else:
        out = np.where(x == j, 1, 0)
    return np.where(missing, -1, out).astype(np.int64)


def naive_path(split: np.ndarray, fanout: int, coded, raw: np.ndarray, r: int) -> list[int]:
    """Heap indices visited by row ``r`` from the root; the last one is where it stops."""
    u = 0
    path = [u]
    while True:
        s = int(split[u])
        if s < 0:
            return path
        c = naive_child(coded, s, float(raw[int(coded.cand_attr[s]), r]))
        if c < 0:
            return path
        u = fanout * u + 1 + c
        path.append(u)


def naive_route(split: np.ndarray, fanout: int, coded, raw: np.ndarray) -> np.ndarray:
    """Leaf (heap index) of every row walking the tree from ``split`` (−1: no leaf)."""
    n = raw.shape[1]
    out = np.full(n, -1, dtype=np.int64)
    for r in range(n):
        path = naive_path(split, fanout, coded, raw, r)
        last = path[-1]
        if int(split[last]) == LEAF:
            out[r] = last
    return out


def rows_reaching(u: int, split: np.ndarray, fanout: int, coded, raw: np.ndarray) -> list[int]:
    """Rows whose root-to-leaf walk passes through node ``u`` (ascending row order)."""
    return [r for r in range(raw.shape[1]) if u in naive_path(split, fanout, coded, raw, r)]


def ancestors(u: int, fanout: int) -> list[int]:
    out = []
    while u > 0:
        u = (u - 1) // fanout
        out.append(u)
    return out


def heap_depth(u: int, fanout: int) -> int:
    return len(ancestors(u, fanout))


# ---------------------------------------------------------------------------
# Scores (docs/ALGORITHMS.md §2.4–2.6)
# ---------------------------------------------------------------------------

def weighted_gini(labels) -> float:
    """|S|·gini(S) = |S|·(1 − Σ_c p_c²) for a multiset of class labels (0 if empty)."""
    labels = list(labels)
    n = len(labels)
    if n == 0:
        return 0.0
    counts = {}
    for c in labels:
        counts[c] = counts.get(c, 0) + 1
    return n * (1.0 - sum((k / n) ** 2 for k in counts.values()))


def gini_score(leaf_of_row: np.ndarray, classes: np.ndarray) -> float:
    """S(T) = −Σ_leaves |leaf|·gini(leaf) from a row→leaf map (rows at −1 are ignored)."""
    groups: dict[int, list] = {}
    for r, leaf in enumerate(leaf_of_row):
        if leaf >= 0:
            groups.setdefault(int(leaf), []).append(int(classes[r]))
    return -sum(weighted_gini(g) for g in groups.values())


def purity(leaf_of_row: np.ndarray, classes: np.ndarray, n_rows: int) -> float:
    """g(T) = Σ_leaves (|leaf|/N)·Σ_c (n_c/|leaf|)², N = all rows (incl. rows at no leaf)."""
    groups: dict[int, list] = {}
    for r, leaf in enumerate(leaf_of_row):
        if leaf >= 0:
            groups.setdefault(int(leaf), []).append(int(classes[r]))
    g = 0.0
    for labels in groups.values():
        m = len(labels)
        counts = {}
        for c in labels:
            counts[c] = counts.get(c, 0) + 1
        g += (m / n_rows) * sum((k / m) ** 2 for k in counts.values())
    return g


def pair_score(leaf_1: np.ndarray, leaf_2: np.ndarray, classes: np.ndarray) -> float:
    """g(T1)·(1 + g(T2))/2; T2's classes are T1's leaves, rows at no T1 leaf one class."""
    n = leaf_1.size
    classes_2 = np.where(leaf_1 >= 0, leaf_1, -7)  # one extra class for 'no T1 leaf'
    return purity(leaf_1, classes, n) * (1.0 + purity(leaf_2, classes_2, n)) / 2.0


def split_utility(rows, coded, s: int, raw: np.ndarray, classes: np.ndarray) -> float:
    """q = −Σ_children |child|·gini(child) of candidate ``s`` on the given rows (rows with a
    missing split value reach no child and are left out)."""
    a, kind, j, nch, _ = candidate_info(coded, s)
    children: dict[int, list] = {c: [] for c in range(nch)}
    for r in rows:
        c = naive_child(coded, s, float(raw[a, r]))
        if c >= 0:
            children[c].append(int(classes[r]))
    return -sum(weighted_gini(v) for v in children.values())


def split_utilities(rows, coded, raw, classes, used=()) -> np.ndarray:
    """Brute force over every candidate; candidates in ``used`` get −inf."""
    out = np.empty(coded.n_candidates)
    for s in range(coded.n_candidates):
        out[s] = -np.inf if s in used else split_utility(rows, coded, s, raw, classes)
    return out


def leaf_table(leaf_l: np.ndarray, leaf_r: np.ndarray, leaves_l, leaves_r) -> np.ndarray:
    """|A_i ∩ B_j| by a double loop over the leaves (rows reaching no leaf are not counted)."""
    t = np.zeros((len(leaves_l), len(leaves_r)), dtype=np.int64)
    for i, a in enumerate(leaves_l):
        for j, b in enumerate(leaves_r):
            t[i, j] = int(np.sum((leaf_l == a) & (leaf_r == b)))
    return t


# ---------------------------------------------------------------------------
# Readable conditions (TreeRecord.leaf_conditions) on raw values
# ---------------------------------------------------------------------------

def condition_holds(cond, attr: Attribute, x: float) -> bool:
    """Evaluate one Condition on a raw value; a missing value satisfies no condition."""
    if np.isnan(x):
        return False
    if cond.op == "<=":
        return x <= cond.value
    if cond.op == ">":
        return x > cond.value
    if cond.op == "is":
        assert attr.type == BOOLEAN
        return (x == 1.0) == bool(cond.value)
    label = attr.categories[int(x)]
    if cond.op == "=":
        return label == cond.value
    if cond.op == "!=":
        return label != cond.value
    raise AssertionError(f"unknown operator {cond.op!r}")


def conjunction_rows(conditions, view) -> np.ndarray:
    """Boolean mask of the rows of ``view`` satisfying every condition."""
    by_name = {a.name: (i, a) for i, a in enumerate(view.attributes)}
    n = view.values.shape[1]
    mask = np.ones(n, dtype=bool)
    for cond in conditions:
        i, attr = by_name[cond.attribute]
        mask &= np.array([condition_holds(cond, attr, float(x)) for x in view.values[i]])
    return mask


# ---------------------------------------------------------------------------
# Structural checks of a flat tree (docs/ALGORITHMS.md §2.1)
# ---------------------------------------------------------------------------

def structure_problems(split: np.ndarray, coded, fanout: int) -> list[str]:
    """Ways ``split`` (nodes[SPLIT]) is not a well-formed tree: the root exists; every
    internal node has exactly its candidate's children (the others absent); nothing is
    left to GROW; no node hangs below a leaf or an absent node."""
    problems = []
    cap = split.size
    if split[0] == ABSENT:
        problems.append("root absent")
    for u in range(cap):
        s = int(split[u])
        if s == GROW:
            problems.append(f"node {u} still GROW")
        kids = [fanout * u + 1 + i for i in range(fanout) if fanout * u + 1 + i < cap]
        if s >= 0:
            nch = int(coded.cand_nchild[s])
            for i, ch in enumerate(kids):
                if i < nch and split[ch] == ABSENT:
                    problems.append(f"child {i} of internal node {u} is absent")
                if i >= nch and split[ch] != ABSENT:
                    problems.append(f"surplus child {i} of node {u} exists")
            if nch > len(kids):
                problems.append(f"node {u} at the last level is split")
        else:
            for ch in kids:
                if split[ch] != ABSENT:
                    problems.append(f"node {ch} below non-internal node {u} exists")
    return problems


def repeated_on_path(split: np.ndarray, fanout: int) -> list[tuple[int, list[int]]]:
    """Leaves whose root-to-leaf path uses one candidate more than once."""
    out = []
    for u in np.flatnonzero(split == LEAF):
        path = [int(split[a]) for a in ancestors(int(u), fanout)]
        if len(set(path)) < len(path):
            out.append((int(u), path))
    return out


# ---------------------------------------------------------------------------
# Thin drivers of dpcore kernels (NOT references: they only set up the calls)
# ---------------------------------------------------------------------------

def grow_random_tree(coded, y: np.ndarray, depth: int, rng: np.random.Generator,
                     faithful_stop: bool = False, min_rows: int = 0, n_classes: int | None = None):
    """``row_chains_reference.random_tree``: a random tree over all rows (grow from a GROW
    root, then one relayout). Returns (nodes, perm, leaf_of_row, hist) with
    ``hist[leaf, class]`` the kernel's per-leaf class histogram."""
    from dpcore.redescriptions import kernels as K
    from dpcore.redescriptions.trees import cands_matrix
    from tests.support import row_chains_reference as RC

    fanout = coded.fanout
    n = coded.codes.shape[1]
    y = np.ascontiguousarray(y, dtype=np.int64)
    k = int(y.max()) + 1 if n_classes is None else int(n_classes)
    cap = K.tree_capacity(fanout, depth)
    nodes = np.zeros((4, cap), dtype=np.int64)
    perm = np.empty(n, dtype=np.int64)
    leaf = np.empty(n, dtype=np.int64)
    hist = np.zeros((cap, max(k, 1)), dtype=np.int64)
    RC.random_tree(n, nodes, perm, leaf, coded.codes, cands_matrix(coded), fanout,
                  K.node_depths(fanout, depth), depth, bool(faithful_stop), y, int(min_rows), rng,
                  np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
                  np.zeros(cap, dtype=np.int64), hist, True)
    return nodes, perm, leaf, hist


def layout_problems(nodes: np.ndarray, perm: np.ndarray, coded, raw: np.ndarray,
                    fanout: int) -> list[str]:
    """Ways the row layout of ``nodes`` breaks the documented contract: every node's rows
    are ``perm[START:END]``; an internal node's children follow each other in child order
    from START to KEPT; ``perm[KEPT:END]`` are the rows with a missing split value; a
    leaf has KEPT = END."""
    problems = []
    split = nodes[SPLIT]
    for u in np.flatnonzero(split != ABSENT):
        u = int(u)
        st, kept, end = (int(nodes[k, u]) for k in (START, KEPT, END))
        if not st <= kept <= end:
            problems.append(f"node {u}: START {st}, KEPT {kept}, END {end}")
            continue
        s = int(split[u])
        if s < 0:
            if kept != end:
                problems.append(f"leaf {u}: KEPT {kept} != END {end}")
            continue
        pos = st
        for i in range(int(coded.cand_nchild[s])):
            ch = fanout * u + 1 + i
            if nodes[START, ch] != pos:
                problems.append(f"child {i} of {u} starts at {nodes[START, ch]}, not {pos}")
            pos = int(nodes[END, ch])
        if pos != kept:
            problems.append(f"children of {u} end at {pos}, KEPT is {kept}")
        a = int(coded.cand_attr[s])
        if not np.isnan(raw[a, perm[kept:end]]).all():
            problems.append(f"node {u}: rows in [KEPT, END) have a split value")
    return problems
