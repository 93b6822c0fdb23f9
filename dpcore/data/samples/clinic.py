"""The ``clinic`` sample: patients × (diagnoses, sex, age group) vs lab results, six planted
rules (public demo data)."""

from __future__ import annotations

import numpy as np

from dpcore.data.samples.planted import (
    GRID_INTERVALS,
    PlantedRule,
    check_on_grid,
    rule_masks,
    truncated_draws,
)
from dpcore.data.schema import (
    BOOLEAN,
    CATEGORICAL,
    LEFT,
    NUMERIC,
    RIGHT,
    Attribute,
    Schema,
    ViewSpec,
)
from dpcore.errors import ParameterError

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
        provenance=(f"synthetic, generated by dpcore.data.samples.generate_clinic with "
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
    for name, _unit, lo, step, dec, (c, s, log), _ in _LABS:
        hi = lo + GRID_INTERVALS * step
        if name in rule_by_lab:
            r = rule_by_lab[name]
            check_on_grid(r, lo, step)
            ml, _ = rule_masks(r, dx, {name: np.zeros(n)})
            inside = np.where(ml, rng.random(n) < r.hit_rate, rng.random(n) < r.false_rate)
            rc, rs, rlog = _CLINIC_RULE_REGION[name]
            x = np.empty(n)
            thr = r.threshold
            # region of the right query and its complement
            reg, comp = ((thr, hi), (lo, thr)) if r.right_op == ">" else ((lo, thr), (thr, hi))
            x[inside] = truncated_draws(rng, int(inside.sum()), rc, rs, *reg, rlog)
            x[~inside] = truncated_draws(rng, int((~inside).sum()), c, s, *comp, log)
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
            x = truncated_draws(rng, n, c, s, lo, hi, log) * mult
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
