"""The CMS-2-k-shaped sample (``cms_small`` and the benchmark's full size): Boolean
chronic-condition flags vs payment amounts, four planted rules (public demo data)."""

from __future__ import annotations

import numpy as np

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.samples.planted import (
    GRID_INTERVALS,
    PlantedRule,
    check_on_grid,
    rule_masks,
    truncated_draws,
)
from dpcore.data.schema import (
    BOOLEAN,
    LEFT,
    NUMERIC,
    RIGHT,
    Attribute,
    Schema,
    ViewSpec,
)
from dpcore.errors import ParameterError

# ---------------------------------------------------------------------------
# The CMS-2-k-like dataset
# ---------------------------------------------------------------------------

# Named chronic-condition flags (prevalence); further flags are COND_### with random prevalence.
_CMS_CONDITIONS = [
    ("CHF", 0.22), ("CKD", 0.16), ("COPD", 0.14), ("DIABETES", 0.30),
    ("ISCHEMIC_HEART", 0.35), ("ALZHEIMER", 0.15), ("STROKE_TIA", 0.06), ("CANCER", 0.07),
    ("DEPRESSION", 0.20), ("OSTEOPOROSIS", 0.17), ("RA_OA", 0.15), ("HYPERTENSION", 0.40),
    ("ESRD", 0.05), ("ASTHMA", 0.08), ("AFIB", 0.10),
]
# Named payment amounts (USD per year): (name, step, median, P(amount = 0)).
# Domain [0, 33·step]; grid thresholds k·step.
_CMS_PAYMENTS = [
    ("IP_REIMB", 2000.0, 8000.0, 0.80), ("OP_REIMB", 500.0, 400.0, 0.45),
    ("CAR_REIMB", 500.0, 600.0, 0.30), ("IP_BENRES", 100.0, 800.0, 0.85),
    ("OP_BENRES", 100.0, 100.0, 0.45), ("CAR_BENRES", 100.0, 150.0, 0.30),
    ("IP_PPPYMT", 500.0, 1500.0, 0.95), ("OP_PPPYMT", 100.0, 50.0, 0.85),
    ("CAR_PPPYMT", 50.0, 40.0, 0.90), ("RX_COST", 500.0, 900.0, 0.25),
]
_CMS_RULE_REGION = {"IP_REIMB": 9000.0, "CAR_REIMB": 3000.0, "OP_REIMB": 2500.0,
                    "IP_BENRES": 1600.0}


def cms_like_planted_rules() -> list[PlantedRule]:
    """The four rules planted by :func:`generate_cms_like` (independent of seed and size)."""
    return [
        PlantedRule("C1", ("CHF", "CKD"), "or", "IP_REIMB", ">", 4000.0, (0.55, 0.85), 0.85,
                    0.04, "heart or kidney failure ⇒ inpatient stays"),
        PlantedRule("C2", ("DIABETES",), "single", "CAR_REIMB", ">", 1500.0, (0.60, 0.90),
                    0.85, 0.03, "diabetes care billed by physicians"),
        PlantedRule("C3", ("COPD", "ISCHEMIC_HEART"), "and", "OP_REIMB", ">", 1000.0,
                    (0.45, 0.80), 0.85, 0.02, "outpatient procedures"),
        PlantedRule("C4", ("ALZHEIMER", "STROKE_TIA"), "or", "IP_BENRES", ">", 1000.0,
                    (0.50, 0.85), 0.80, 0.02, "inpatient co-payments"),
    ]


def _cms_names(n_bool: int, n_numeric: int):
    width = len(str(max(n_bool, n_numeric)))
    bools = [c for c, _ in _CMS_CONDITIONS[:n_bool]]
    bools += [f"COND_{i:0{width}d}" for i in range(len(bools) + 1, n_bool + 1)]
    nums = [c for c, *_ in _CMS_PAYMENTS[:n_numeric]]
    nums += [f"PAY_{i:0{width}d}" for i in range(len(nums) + 1, n_numeric + 1)]
    return bools, nums


def _cms_arrays(n_rows: int, n_bool: int, n_numeric: int, seed: int):
    """Schema, left (n_bool, n) and right (n_numeric, n) float64 arrays, rules."""
    n = int(n_rows)
    if n < 1:
        raise ParameterError(f"n_rows must be ≥ 1, got {n_rows}")
    if n_bool < 7 or n_numeric < 4:
        raise ParameterError(f"n_bool must be ≥ 7 and n_numeric ≥ 4 (the planted rules use the "
                             f"first named ones), got {n_bool} and {n_numeric}")
    rng = np.random.default_rng(seed)
    rules = cms_like_planted_rules()
    bool_names, num_names = _cms_names(n_bool, n_numeric)
    # per-attribute parameters drawn first so they do not depend on n_rows
    extra_prev = rng.uniform(0.03, 0.35, size=n_bool)
    extra_pay = [(float(rng.choice([50.0, 100.0, 200.0, 500.0, 1000.0])),
                  float(rng.uniform(0.1, 0.4)), float(rng.uniform(0.2, 0.9)))
                 for _ in range(n_numeric)]
    # a latent morbidity score (mean 1) correlates the flags mildly
    morbidity = rng.gamma(4.0, 0.25, size=n).astype(np.float32)

    left = np.empty((n_bool, n), dtype=np.float64)
    prevalence = dict(_CMS_CONDITIONS)
    for a, name in enumerate(bool_names):
        p = np.float32(prevalence.get(name, extra_prev[a]))
        np.less(rng.random(n, dtype=np.float32), np.minimum(p * morbidity, 0.95), out=left[a],
                casting="unsafe")
        if left[a].min() == left[a].max():  # never constant (would fail validation)
            left[a, a % n] = 1.0 - left[a, a % n]

    col = {name: left[a] for a, name in enumerate(bool_names)}
    rule_by_pay = {r.right_attr: r for r in rules}
    right = np.empty((n_numeric, n), dtype=np.float64)
    named_pay = {p[0]: p[1:] for p in _CMS_PAYMENTS}
    attrs_right = []
    for a, name in enumerate(num_names):
        if name in named_pay:
            step, median, p_zero = named_pay[name]
        else:
            step, frac, p_zero = extra_pay[a]
            median = frac * GRID_INTERVALS * step / 4
        hi = GRID_INTERVALS * step
        row = right[a]
        if name in rule_by_pay:
            r = rule_by_pay[name]
            check_on_grid(r, 0.0, step)
            ml, _ = rule_masks(r, col, {name: np.zeros(1)})
            inside = np.where(ml, rng.random(n, dtype=np.float32) < r.hit_rate,
                              rng.random(n, dtype=np.float32) < r.false_rate)
            k = int(inside.sum())
            row[inside] = truncated_draws(rng, k, _CMS_RULE_REGION[name], 0.6,
                                          r.threshold + 10.0, hi,
                                 True)
            out = ~inside
            zero = rng.random(n - k, dtype=np.float32) < 0.6
            below = truncated_draws(rng, n - k, median / 4, 0.8, 10.0, r.threshold, True)
            row[out] = np.where(zero, 0.0, below)
        else:
            zero = rng.random(n, dtype=np.float32) < p_zero
            row[:] = truncated_draws(rng, n, median, 1.0, 10.0, hi, True)
            row[zero] = 0.0
        np.round(row / 10.0, out=row)
        row *= 10.0  # whole tens of dollars, as in DE-SynPUF
        np.clip(row, 0.0, hi, out=row)
        if row.min() == row.max():
            row[a % n] = hi
        attrs_right.append(Attribute(name, RIGHT, NUMERIC, domain=(0.0, hi), unit="USD/year",
                                     description=f"payment amount (grid step {step:g} USD)"))
    attrs_left = [Attribute(nm, LEFT, BOOLEAN, description="chronic-condition flag")
                  for nm in bool_names]
    rule_lines = "; ".join(f"{r.name}: {r.text} (intended true J {r.jaccard_range[0]:.2f}–"
                           f"{r.jaccard_range[1]:.2f})" for r in rules)
    schema = Schema(
        name="cms_like",
        attributes=tuple(attrs_left + attrs_right),
        views=(ViewSpec("conditions", "cms_like.csv"), ViewSpec("payments", "cms_like.csv")),
        id_column="beneficiary_id",
        description=(f"Synthetic data in the shape of the paper's CMS-2-k: {n_bool} Boolean "
                     f"chronic-condition flags (left) vs {n_numeric} yearly payment amounts in "
                     f"USD (right). Planted redescriptions — {rule_lines}."),
        provenance=(f"synthetic, generated by dpcore.data.samples.generate_cms_like with "
                    f"n_rows={n}, n_bool={n_bool}, n_numeric={n_numeric}, seed={seed}"),
        public_demo=True,
    )
    return schema, left, right, rules


def generate_cms_like(n_rows: int, n_bool: int = 452, n_numeric: int = 152, seed: int = 20232):
    """CMS-2-k-shaped synthetic data as DataFrames.

    Returns
    -------
    schema : Schema
        Public; one file ``cms_like.csv`` holding both views (id column ``beneficiary_id``).
    left_df : pandas.DataFrame
        ``beneficiary_id`` + ``n_bool`` 0/1 (uint8) condition flags.
    right_df : pandas.DataFrame
        ``beneficiary_id`` + ``n_numeric`` payment amounts (float32, USD/year, multiples of 10,
        many zeros), row-aligned with ``left_df``.
    planted_rules : list of PlantedRule
        See :func:`cms_like_planted_rules`.
    """
    import pandas as pd

    schema, left, right, rules = _cms_arrays(n_rows, n_bool, n_numeric, seed)
    width = max(6, len(str(n_rows)))
    ids = np.array([f"B{i:0{width}d}" for i in range(1, int(n_rows) + 1)], dtype=object)
    lnames = [a.name for a in schema.view_attributes(LEFT)]
    rnames = [a.name for a in schema.view_attributes(RIGHT)]
    left_df = pd.concat([pd.DataFrame({"beneficiary_id": ids}),
                         pd.DataFrame(left.T.astype(np.uint8), columns=lnames)], axis=1)
    right_df = pd.concat([pd.DataFrame({"beneficiary_id": ids}),
                          pd.DataFrame(right.T.astype(np.float32), columns=rnames)], axis=1)
    return schema, left_df, right_df, rules


def generate_cms_like_dataset(n_rows: int = 115_200, n_bool: int = 452, n_numeric: int = 152,
                              seed: int = 20232) -> TwoViewDataset:
    """CMS-2-k-shaped synthetic data built directly as a :class:`TwoViewDataset` (no pandas).

    Same values as :func:`generate_cms_like` for the same arguments; ``ids`` are row
    positions. Memory: the two float64 arrays (8 bytes × 604 × n_rows ≈ 0.56 GB at the paper's
    115,200 rows) plus O(n_rows) temporaries. Planted rules: :func:`cms_like_planted_rules`.
    """
    schema, left, right, _ = _cms_arrays(n_rows, n_bool, n_numeric, seed)
    return TwoViewDataset.from_arrays(schema, left, right)
