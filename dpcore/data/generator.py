"""Seeded synthetic two-view data with planted redescriptions (public demo data).

Everything produced here is synthetic: it may be shown to anyone (``public_demo = True``),
including true supports and Jaccards, so teachers can compare noisy and true statistics.

Two generators:

* :func:`generate_clinic` — patients × (≈40 Boolean diagnoses + sex + age group) vs
  (25 numeric lab results), with six planted rules of the form
  "diagnosis query ⇔ lab range" (single diagnosis, ∨ and ∧ of two);
* :func:`generate_cms_like` / :func:`generate_cms_like_dataset` — the shape of the paper's
  CMS-2-k data (Boolean-heavy left view of chronic-condition flags, numeric right view of
  payment amounts; default 452 + 152 attributes), fast enough for 115,200 rows.

Grid alignment. Every numeric domain is declared as ``[lo, lo + 33·step]`` with a round
``step``: the strict-mode public split grid (``grid_bins = 32`` equal-width interior
thresholds) is then exactly ``lo + k·step``, k = 1..32 — round numbers — and every planted
cut point (e.g. BNP 400 pg/mL = 4 × 100) is one of those grid thresholds, so a strict-mode
tree can express each planted rule exactly.

Run ``python -m dpcore.data.generator --write sample_data`` to (re)write the shipped sample data.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import ndtr, ndtri

from dpcore.dataset import TwoViewDataset
from dpcore.errors import ParameterError
from dpcore.schema import (
    BOOLEAN,
    CATEGORICAL,
    LEFT,
    NUMERIC,
    RIGHT,
    Attribute,
    Schema,
    ViewSpec,
    save_schema,
)

__all__ = ["PlantedRule", "rule_masks", "rule_masks_dataset", "true_jaccard", "jaccard",
           "generate_clinic", "clinic_planted_rules", "generate_cms_like",
           "generate_cms_like_dataset", "cms_like_planted_rules", "write_dataset", "main"]

GRID_INTERVALS = 33  # grid_bins + 1 with the default grid_bins = 32


# ---------------------------------------------------------------------------
# Planted rules
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class PlantedRule:
    """A redescription planted by a generator, stored as structured conditions.

    Left query: the Boolean attributes ``left_attrs`` (each "= true") joined by ``left_op``
    (``"single"``, ``"and"`` or ``"or"``). Right query: ``right_attr right_op threshold`` with
    ``right_op`` ``">"`` or ``"<="`` (a missing value satisfies neither). ``jaccard_range`` is
    the intended range of the TRUE Jaccard on generated data (at the default sizes).

    Attributes
    ----------
    name : str
        Short label (e.g. "R1").
    left_attrs : tuple of str
    left_op : str
    right_attr : str
    right_op : str
    threshold : float
        In the right attribute's unit; always a threshold of the public split grid.
    jaccard_range : (float, float)
    hit_rate, false_rate : float
        Generator parameters: P(right query | left query) and P(right query | not left query)
        before missing values.
    note : str
    """

    name: str
    left_attrs: tuple[str, ...]
    left_op: str
    right_attr: str
    right_op: str
    threshold: float
    jaccard_range: tuple[float, float]
    hit_rate: float = 0.85
    false_rate: float = 0.04
    note: str = ""

    @property
    def left_text(self) -> str:
        """Left query in the app's notation, e.g. ``DX_CHF ∨ DX_CKD``."""
        sym = {"single": "", "and": " ∧ ", "or": " ∨ "}[self.left_op]
        return sym.join(self.left_attrs)

    @property
    def right_text(self) -> str:
        """Right query, e.g. ``LAB_BNP > 400``."""
        op = "≤" if self.right_op == "<=" else ">"
        return f"{self.right_attr} {op} {self.threshold:g}"

    @property
    def text(self) -> str:
        return f"{self.left_text}  ⇔  {self.right_text}"


def _get(table, name: str) -> np.ndarray:
    return np.asarray(table[name], dtype=np.float64)


def rule_masks(rule: PlantedRule, left, right) -> tuple[np.ndarray, np.ndarray]:
    """Supports (Boolean masks) of a rule's left and right query.

    Parameters
    ----------
    left, right : mapping of column name → array-like (e.g. DataFrames), row-aligned
        Boolean columns as 0/1 (NaN = missing = not in the support).
    """
    cols = [_get(left, a) == 1.0 for a in rule.left_attrs]
    if rule.left_op == "and":
        ml = np.logical_and.reduce(cols)
    elif rule.left_op == "or":
        ml = np.logical_or.reduce(cols)
    else:
        ml = cols[0]
    x = _get(right, rule.right_attr)
    with np.errstate(invalid="ignore"):
        mr = (x > rule.threshold) if rule.right_op == ">" else (x <= rule.threshold)
    return ml, mr & ~np.isnan(x)


def rule_masks_dataset(rule: PlantedRule, dataset: TwoViewDataset):
    """:func:`rule_masks` on a loaded :class:`TwoViewDataset` (columns looked up by name)."""
    tables = []
    for view in dataset.views:
        tables.append({a.name: view.values[i] for i, a in enumerate(view.attributes)})
    return rule_masks(rule, tables[0], tables[1])


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """|a ∧ b| / |a ∨ b| of two Boolean masks (0 when the union is empty)."""
    union = int(np.count_nonzero(a | b))
    return int(np.count_nonzero(a & b)) / union if union else 0.0


def true_jaccard(rule: PlantedRule, left, right=None) -> float:
    """TRUE Jaccard of a rule on tables (``left``, ``right``) or on a TwoViewDataset ``left``."""
    if isinstance(left, TwoViewDataset):
        return jaccard(*rule_masks_dataset(rule, left))
    return jaccard(*rule_masks(rule, left, right))


# ---------------------------------------------------------------------------
# Sampling helpers
# ---------------------------------------------------------------------------

def _trunc(rng, n: int, center: float, spread: float, lo: float, hi: float,
           log: bool) -> np.ndarray:
    """n draws of Normal(center, spread) (or LogNormal(median=center, σ=spread)) truncated to
    [lo, hi], by inverse CDF (vectorised, exact up to float precision)."""
    if n == 0:
        return np.empty(0)
    if log:
        with np.errstate(divide="ignore"):
            a = (math.log(lo) - math.log(center)) / spread if lo > 0 else -np.inf
        b = (math.log(hi) - math.log(center)) / spread
    else:
        a, b = (lo - center) / spread, (hi - center) / spread
    pa, pb = ndtr(a), ndtr(b)
    u = pa + rng.random(n) * (pb - pa)
    z = ndtri(np.clip(u, 1e-300, 1 - 1e-16))
    x = np.exp(math.log(center) + spread * z) if log else center + spread * z
    return np.clip(x, lo, hi)


def _grid_check(rule: PlantedRule, lo: float, step: float) -> None:
    k = (rule.threshold - lo) / step
    assert abs(k - round(k)) < 1e-9 and 1 <= round(k) <= GRID_INTERVALS - 1, rule


# ---------------------------------------------------------------------------
# The clinic dataset
# ---------------------------------------------------------------------------

AGE_GROUPS = ("18-39", "40-64", "65-79", "80+")
_AGE_P = np.array([0.30, 0.35, 0.22, 0.13])
_AGE_RISK = np.array([0.5, 0.9, 1.4, 1.9])

# name, base prevalence, age sensitivity k (risk ∝ age_risk^k), description
_DIAGNOSES = [
    ("DX_HYPERTENSION", 0.35, 1.0, "essential hypertension"),
    ("DX_HYPERLIPIDEMIA", 0.30, 1.0, "hyperlipidaemia"),
    ("DX_DIABETES", 0.20, 0.7, "type 2 diabetes mellitus"),
    ("DX_SMOKER", 0.28, 0.0, "current tobacco use"),
    ("DX_COPD", None, 0.0, "chronic obstructive pulmonary disease (mostly smokers)"),
    ("DX_CHF", 0.11, 1.5, "congestive heart failure"),
    ("DX_CKD", 0.12, 1.2, "chronic kidney disease, stage 3 or worse (more with diabetes)"),
    ("DX_HYPOTHYROID", 0.10, 0.5, "hypothyroidism"),
    ("DX_ANEMIA", 0.14, 0.5, "anaemia"),
    ("DX_GI_BLEED", 0.06, 0.7, "gastrointestinal bleeding"),
    ("DX_ALCOHOL_USE", 0.10, 0.0, "alcohol use disorder"),
    ("DX_CIRRHOSIS", None, 0.0, "liver cirrhosis (more with alcohol use)"),
    ("DX_HEPATITIS", 0.06, 0.0, "chronic viral hepatitis"),
    ("DX_OBESITY", 0.30, 0.3, "obesity (BMI ≥ 30)"),
    ("DX_AFIB", 0.09, 1.5, "atrial fibrillation"),
    ("DX_CAD", 0.15, 1.3, "coronary artery disease"),
    ("DX_STROKE", 0.06, 1.5, "stroke or TIA"),
    ("DX_ASTHMA", 0.10, 0.0, "asthma"),
    ("DX_DEPRESSION", 0.18, 0.0, "depression"),
    ("DX_ANXIETY", 0.16, 0.0, "anxiety disorder"),
    ("DX_DEMENTIA", 0.05, 2.0, "dementia"),
    ("DX_OSTEOARTHRITIS", 0.25, 1.2, "osteoarthritis"),
    ("DX_OSTEOPOROSIS", 0.10, 1.5, "osteoporosis (more in women)"),
    ("DX_RHEUM_ARTHRITIS", 0.05, 0.5, "rheumatoid arthritis"),
    ("DX_GERD", 0.20, 0.3, "gastro-oesophageal reflux disease"),
    ("DX_MIGRAINE", 0.12, -0.5, "migraine"),
    ("DX_GOUT", 0.06, 0.8, "gout (more in men)"),
    ("DX_PNEUMONIA", 0.08, 0.8, "pneumonia"),
    ("DX_SEPSIS", 0.05, 1.0, "sepsis"),
    ("DX_UTI", 0.12, 0.5, "urinary tract infection"),
    ("DX_PVD", 0.07, 1.3, "peripheral vascular disease"),
    ("DX_DVT", 0.05, 0.8, "deep vein thrombosis"),
    ("DX_CANCER", 0.10, 1.2, "malignant neoplasm"),
    ("DX_HIV", 0.05, 0.0, "HIV infection"),
    ("DX_PSORIASIS", 0.05, 0.0, "psoriasis"),
    ("DX_GLAUCOMA", 0.06, 1.5, "glaucoma"),
    ("DX_CATARACT", 0.15, 2.0, "cataract"),
    ("DX_SLEEP_APNEA", 0.12, 0.5, "obstructive sleep apnoea"),
    ("DX_PARKINSON", 0.05, 2.0, "Parkinson's disease"),
    ("DX_EPILEPSY", 0.05, 0.0, "epilepsy"),
]

# name, unit, lo, step, decimals, (center, spread, log) of the usual distribution, description.
# Domain = [lo, lo + 33·step]; grid thresholds = lo + k·step, k = 1..32.
_LABS = [
    ("LAB_BNP", "pg/mL", 0.0, 100.0, 0, (80.0, 0.8, True), "B-type natriuretic peptide"),
    ("LAB_HBA1C", "%", 0.0, 0.5, 1, (5.4, 0.45, False), "glycated haemoglobin"),
    ("LAB_PCO2", "mmHg", 0.0, 5.0, 0, (40.0, 3.0, False), "arterial CO2 partial pressure"),
    ("LAB_TSH", "mIU/L", 0.0, 0.5, 2, (1.8, 0.45, True), "thyroid-stimulating hormone"),
    ("LAB_HEMOGLOBIN", "g/dL", 5.0, 0.5, 1, (14.0, 1.3, False), "haemoglobin"),
    ("LAB_ALT", "U/L", 0.0, 50.0, 0, (25.0, 0.45, True), "alanine aminotransferase"),
    ("LAB_CREATININE", "mg/dL", 0.0, 0.5, 2, (0.9, 0.25, True), "serum creatinine"),
    ("LAB_BUN", "mg/dL", 0.0, 5.0, 0, (14.0, 0.35, True), "blood urea nitrogen"),
    ("LAB_SODIUM", "mmol/L", 100.0, 2.0, 0, (139.0, 3.0, False), "serum sodium"),
    ("LAB_POTASSIUM", "mmol/L", 0.0, 0.25, 1, (4.2, 0.4, False), "serum potassium"),
    ("LAB_BICARBONATE", "mmol/L", 0.0, 2.0, 0, (25.0, 2.5, False), "serum bicarbonate"),
    ("LAB_GLUCOSE", "mg/dL", 0.0, 20.0, 0, (100.0, 0.2, True), "fasting plasma glucose"),
    ("LAB_WBC", "10^9/L", 0.0, 1.0, 1, (7.0, 0.3, True), "white blood cell count"),
    ("LAB_PLATELETS", "10^9/L", 0.0, 25.0, 0, (250.0, 60.0, False), "platelet count"),
    ("LAB_ALBUMIN", "g/dL", 0.0, 0.25, 1, (4.0, 0.4, False), "serum albumin"),
    ("LAB_CALCIUM", "mg/dL", 0.0, 0.5, 1, (9.4, 0.4, False), "serum calcium"),
    ("LAB_CHOLESTEROL", "mg/dL", 0.0, 20.0, 0, (195.0, 35.0, False), "total cholesterol"),
    ("LAB_LDL", "mg/dL", 0.0, 10.0, 0, (115.0, 30.0, False), "LDL cholesterol"),
    ("LAB_HDL", "mg/dL", 0.0, 5.0, 0, (52.0, 13.0, False), "HDL cholesterol"),
    ("LAB_TRIGLYCERIDES", "mg/dL", 0.0, 50.0, 0, (130.0, 0.45, True), "triglycerides"),
    ("LAB_CRP", "mg/L", 0.0, 10.0, 1, (3.0, 1.0, True), "C-reactive protein"),
    ("LAB_TROPONIN", "ng/L", 0.0, 10.0, 0, (5.0, 0.8, True), "high-sensitivity troponin T"),
    ("LAB_INR", "ratio", 0.0, 0.25, 2, (1.05, 0.1, True), "international normalised ratio"),
    ("LAB_BILIRUBIN", "mg/dL", 0.0, 0.5, 1, (0.7, 0.4, True), "total bilirubin"),
    ("LAB_AST", "U/L", 0.0, 50.0, 0, (25.0, 0.45, True), "aspartate aminotransferase"),
]

# Rule lab: distribution of values in the rule's region (center, spread, log).
_CLINIC_RULE_REGION = {
    "LAB_BNP": (900.0, 0.7, True),
    "LAB_HBA1C": (7.8, 1.2, False),
    "LAB_PCO2": (52.0, 5.0, False),
    "LAB_TSH": (7.5, 0.5, True),
    "LAB_HEMOGLOBIN": (9.6, 1.0, False),
    "LAB_ALT": (180.0, 0.6, True),
}


def clinic_planted_rules() -> list[PlantedRule]:
    """The six rules planted by :func:`generate_clinic` (independent of the seed).

    Each threshold is a public grid threshold of its lab's declared domain (see module
    docstring). Intended TRUE Jaccard ranges hold at n_rows ≥ 2,000.
    """
    return [
        PlantedRule("R1", ("DX_CHF", "DX_CKD"), "or", "LAB_BNP", ">", 400.0, (0.60, 0.85),
                    0.85, 0.03, "heart failure or kidney disease raise BNP"),
        PlantedRule("R2", ("DX_DIABETES",), "single", "LAB_HBA1C", ">", 6.5, (0.65, 0.90),
                    0.90, 0.03, "the diagnostic HbA1c cut-off for diabetes"),
        PlantedRule("R3", ("DX_COPD", "DX_SMOKER"), "and", "LAB_PCO2", ">", 45.0, (0.50, 0.80),
                    0.80, 0.025, "CO2 retention in smokers with COPD"),
        PlantedRule("R4", ("DX_HYPOTHYROID",), "single", "LAB_TSH", ">", 4.5, (0.60, 0.85),
                    0.85, 0.02, "raised TSH in hypothyroidism"),
        PlantedRule("R5", ("DX_ANEMIA", "DX_GI_BLEED"), "or", "LAB_HEMOGLOBIN", "<=", 11.0,
                    (0.60, 0.85), 0.85, 0.03, "low haemoglobin from anaemia or bleeding"),
        PlantedRule("R6", ("DX_CIRRHOSIS", "DX_HEPATITIS"), "or", "LAB_ALT", ">", 100.0,
                    (0.55, 0.85), 0.80, 0.02, "liver enzymes in liver disease"),
    ]


def _clinic_schema(seed: int, n_rows: int, rules: list[PlantedRule]) -> Schema:
    attrs = [Attribute("SEX", LEFT, CATEGORICAL, categories=("F", "M"), description="sex"),
             Attribute("AGE_GROUP", LEFT, CATEGORICAL, categories=AGE_GROUPS, unit="years",
                       description="age group")]
    attrs += [Attribute(n, LEFT, BOOLEAN, description=f"diagnosis: {d}")
              for n, _, _, d in _DIAGNOSES]
    attrs += [Attribute(n, RIGHT, NUMERIC, domain=(lo, lo + GRID_INTERVALS * step), unit=u,
                        description=f"{d} (grid step {step:g} {u})")
              for n, u, lo, step, _, _, d in _LABS]
    rule_lines = "; ".join(f"{r.name}: {r.text} (intended true J {r.jaccard_range[0]:.2f}–"
                           f"{r.jaccard_range[1]:.2f})" for r in rules)
    return Schema(
        name="clinic",
        attributes=tuple(attrs),
        views=(ViewSpec("diagnoses", "diagnoses.csv"), ViewSpec("labs", "labs.csv")),
        id_column="patient_id",
        description=("Synthetic patients: 40 diagnosis flags plus sex and age group (left) vs "
                     "25 lab results (right, about 2% missing). Planted redescriptions — "
                     + rule_lines + ". Every planted cut point is a public grid threshold."),
        provenance=(f"synthetic, generated by dpcore.data.generator.generate_clinic with "
                    f"n_rows={n_rows}, seed={seed}; no real patient data"),
        public_demo=True,
    )


def generate_clinic(n_rows: int = 5000, seed: int = 20231):
    """Synthetic clinic data: diagnoses (left) vs labs (right), with planted rules.

    Parameters
    ----------
    n_rows : int
        Number of patients.
    seed : int
        Seed of ``numpy.random.default_rng``; the output is a deterministic function of
        (n_rows, seed).

    Returns
    -------
    schema : Schema
        Public (``public_demo = True``); domains ``[lo, lo + 33·step]`` in each lab's unit.
    left_df : pandas.DataFrame
        ``patient_id``, ``SEX`` (F/M), ``AGE_GROUP``, 40 ``DX_*`` columns as 0/1 (uint8).
    right_df : pandas.DataFrame
        ``patient_id`` and 25 ``LAB_*`` columns (float, NaN = missing, about 2% per lab),
        row-aligned with ``left_df``.
    planted_rules : list of PlantedRule
        See :func:`clinic_planted_rules`.
    """
    import pandas as pd

    if int(n_rows) < 1:
        raise ParameterError(f"n_rows must be ≥ 1, got {n_rows}")
    n = int(n_rows)
    rng = np.random.default_rng(seed)
    rules = clinic_planted_rules()
    male = rng.random(n) < 0.48
    age = rng.choice(len(AGE_GROUPS), size=n, p=_AGE_P)
    dx: dict[str, np.ndarray] = {}
    for name, prev, k, _ in _DIAGNOSES:
        risk = _AGE_RISK ** k
        p = (risk / float(_AGE_P @ risk))[age]
        if name == "DX_COPD":
            p = 0.04 + 0.32 * dx["DX_SMOKER"]
        elif name == "DX_CIRRHOSIS":
            p = 0.03 + 0.25 * dx["DX_ALCOHOL_USE"]
        else:
            p = prev * p
            if name == "DX_CKD":
                p = p + 0.10 * dx["DX_DIABETES"]
            elif name == "DX_GOUT":
                p = p * np.where(male, 1.6, 0.45)
            elif name == "DX_OSTEOPOROSIS":
                p = p * np.where(male, 0.4, 1.55)
        dx[name] = (rng.random(n) < np.clip(p, 0.0, 0.95)).astype(np.uint8)

    rule_by_lab = {r.right_attr: r for r in rules}
    labs: dict[str, np.ndarray] = {}
    for name, unit, lo, step, dec, (c, s, log), _ in _LABS:
        hi = lo + GRID_INTERVALS * step
        if name in rule_by_lab:
            r = rule_by_lab[name]
            _grid_check(r, lo, step)
            ml, _ = rule_masks(r, dx, {name: np.zeros(n)})
            inside = np.where(ml, rng.random(n) < r.hit_rate, rng.random(n) < r.false_rate)
            rc, rs, rlog = _CLINIC_RULE_REGION[name]
            x = np.empty(n)
            thr = r.threshold
            # region of the right query and its complement
            reg, comp = ((thr, hi), (lo, thr)) if r.right_op == ">" else ((lo, thr), (thr, hi))
            x[inside] = _trunc(rng, int(inside.sum()), rc, rs, *reg, rlog)
            x[~inside] = _trunc(rng, int((~inside).sum()), c, s, *comp, log)
        else:
            mult = np.ones(n)
            if name in ("LAB_CREATININE", "LAB_BUN"):
                mult = np.where(dx["DX_CKD"] == 1, 2.0, 1.0)
            elif name == "LAB_GLUCOSE":
                mult = np.where(dx["DX_DIABETES"] == 1, 1.5, 1.0)
            elif name in ("LAB_BILIRUBIN", "LAB_AST"):
                mult = np.where(dx["DX_CIRRHOSIS"] == 1, 2.5, 1.0)
            elif name == "LAB_INR":
                mult = np.where(dx["DX_AFIB"] == 1, 1.8, 1.0)
            elif name == "LAB_TROPONIN":
                mult = np.where(dx["DX_CAD"] == 1, 2.0, 1.0)
            x = _trunc(rng, n, c, s, lo, hi, log) * mult
        x = np.clip(np.round(x, dec), lo, hi)
        x[rng.random(n) < 0.02] = np.nan
        labs[name] = x

    width = max(5, len(str(n)))
    ids = np.array([f"P{i:0{width}d}" for i in range(1, n + 1)], dtype=object)
    left_df = pd.DataFrame({"patient_id": ids,
                            "SEX": np.where(male, "M", "F"),
                            "AGE_GROUP": np.asarray(AGE_GROUPS, dtype=object)[age],
                            **dx})
    right_df = pd.DataFrame({"patient_id": ids, **labs})
    return _clinic_schema(seed, n, rules), left_df, right_df, rules


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
            _grid_check(r, 0.0, step)
            ml, _ = rule_masks(r, col, {name: np.zeros(1)})
            inside = np.where(ml, rng.random(n, dtype=np.float32) < r.hit_rate,
                              rng.random(n, dtype=np.float32) < r.false_rate)
            k = int(inside.sum())
            row[inside] = _trunc(rng, k, _CMS_RULE_REGION[name], 0.6, r.threshold + 10.0, hi,
                                 True)
            out = ~inside
            zero = rng.random(n - k, dtype=np.float32) < 0.6
            below = _trunc(rng, n - k, median / 4, 0.8, 10.0, r.threshold, True)
            row[out] = np.where(zero, 0.0, below)
        else:
            zero = rng.random(n, dtype=np.float32) < p_zero
            row[:] = _trunc(rng, n, median, 1.0, 10.0, hi, True)
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
        provenance=(f"synthetic, generated by dpcore.data.generator.generate_cms_like with "
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


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------

def write_dataset(directory, schema: Schema, left_df, right_df, *,
                  shuffle_right_seed: int | None = None) -> list[Path]:
    """Write view CSVs (named by the schema) and ``schema.json`` into ``directory``.

    If both views name the same file, one CSV holds the id column and all attributes.
    ``shuffle_right_seed`` writes the right file's rows in a shuffled order (exercises the
    id join). Missing values are written as empty cells. Returns the written paths.
    """
    import pandas as pd

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    lf, rf = schema.views[LEFT].file, schema.views[RIGHT].file
    opts = dict(index=False, na_rep="", float_format="%.10g", lineterminator="\n")
    written = []
    if lf == rf:
        extra = [c for c in right_df.columns if c != schema.id_column]
        both = pd.concat([left_df, right_df[extra]], axis=1)
        both.to_csv(d / lf, **opts)
        written.append(d / lf)
    else:
        left_df.to_csv(d / lf, **opts)
        if shuffle_right_seed is not None:
            perm = np.random.default_rng(shuffle_right_seed).permutation(len(right_df))
            right_df = right_df.iloc[perm]
        right_df.to_csv(d / rf, **opts)
        written += [d / lf, d / rf]
    save_schema(schema, d / "schema.json")
    written.append(d / "schema.json")
    return written


def _rules_readme(title: str, intro: str, rules, left_df, right_df, files: str) -> str:
    lines = [f"# {title}", "", intro, "", files, "",
             "## Planted rules", "",
             "| rule | left query | right query | intended true J | measured true J | "
             "support of left / right | note |", "|---|---|---|---|---|---|---|"]
    for r in rules:
        ml, mr = rule_masks(r, left_df, right_df)
        lines.append(f"| {r.name} | `{r.left_text}` | `{r.right_text}` | "
                     f"{r.jaccard_range[0]:.2f}–{r.jaccard_range[1]:.2f} | "
                     f"{jaccard(ml, mr):.3f} | {int(ml.sum())} / {int(mr.sum())} | {r.note} |")
    lines += ["", "Right-query thresholds are thresholds of the public split grid: each numeric "
              "domain is `[lo, lo + 33·step]`, so the 32 grid thresholds are `lo + k·step`. "
              "A missing lab value satisfies no right query.",
              "", "Regenerate with `python -m dpcore.data.generator --write sample_data`.", ""]
    return "\n".join(lines)


def write_samples(root, *, clinic_seed: int = 20231, cms_seed: int = 20232) -> list[Path]:
    """(Re)write ``clinic/`` (5,000 rows) and ``cms_small/`` (3,000 rows × 60 + 20) under root."""
    root = Path(root)
    out = []
    schema, left, right, rules = generate_clinic(5000, clinic_seed)
    out += write_dataset(root / "clinic", schema, left, right, shuffle_right_seed=clinic_seed)
    (root / "clinic" / "README.md").write_text(_rules_readme(
        "clinic — synthetic diagnoses vs labs (public demo)",
        f"Synthetic, generated by `dpcore.data.generator.generate_clinic(n_rows=5000, "
        f"seed={clinic_seed})`; no real patient data. Left view `diagnoses`: 40 Boolean "
        f"`DX_*` flags, `SEX` (F/M) and `AGE_GROUP`. Right view `labs`: 25 numeric `LAB_*` "
        f"results (units in schema.json), about 2 % missing. Public demo data: true "
        f"statistics may be shown to everyone.",
        rules, left, right,
        "Files: `diagnoses.csv`, `labs.csv` (rows in a different order; joined on "
        "`patient_id`), `schema.json`."), encoding="utf-8")
    out.append(root / "clinic" / "README.md")

    schema, left, right, rules = generate_cms_like(3000, 60, 20, cms_seed)
    schema = dataclasses.replace(schema, name="cms_small",
                                 views=(ViewSpec("conditions", "cms_small.csv"),
                                        ViewSpec("payments", "cms_small.csv")))
    out += write_dataset(root / "cms_small", schema, left, right)
    (root / "cms_small" / "README.md").write_text(_rules_readme(
        "cms_small — a small CMS-2-k-shaped synthetic dataset (public demo)",
        f"Synthetic, generated by `dpcore.data.generator.generate_cms_like(3000, n_bool=60, "
        f"n_numeric=20, seed={cms_seed})`: the shape of the paper's CMS-2-k data (Boolean "
        f"chronic-condition flags vs yearly payment amounts in USD) scaled down to ship. "
        f"The full-size version (115,200 × (452 + 152)) is built in memory by "
        f"`generate_cms_like_dataset()` for benchmarks.",
        rules, left, right,
        "Files: `cms_small.csv` holds both views (one file; each attribute's `view` in "
        "`schema.json` maps columns to views), `schema.json`."), encoding="utf-8")
    out.append(root / "cms_small" / "README.md")
    return out


def main(argv=None) -> int:
    """Command line: ``python -m dpcore.data.generator --write sample_data``."""
    parser = argparse.ArgumentParser(prog="python -m dpcore.data.generator",
                                     description="Write the synthetic sample datasets.")
    parser.add_argument("--write", metavar="DIR", required=True,
                        help="root folder to write clinic/ and cms_small/ into")
    parser.add_argument("--clinic-seed", type=int, default=20231)
    parser.add_argument("--cms-seed", type=int, default=20232)
    args = parser.parse_args(argv)
    for p in write_samples(args.write, clinic_seed=args.clinic_seed, cms_seed=args.cms_seed):
        print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
