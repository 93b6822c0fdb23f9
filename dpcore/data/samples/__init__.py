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

Run ``python -m dpcore.data.samples --write sample_data`` to (re)write the shipped sample data.
"""

from dpcore.data.samples.clinic import clinic_planted_rules, generate_clinic
from dpcore.data.samples.cms import (
    cms_like_planted_rules,
    generate_cms_like,
    generate_cms_like_dataset,
)
from dpcore.data.samples.planted import (
    PlantedRule,
    jaccard,
    rule_masks,
    rule_masks_dataset,
    true_jaccard,
)
from dpcore.data.samples.write import main, write_dataset, write_samples

__all__ = ["PlantedRule", "rule_masks", "rule_masks_dataset", "true_jaccard", "jaccard",
           "generate_clinic", "clinic_planted_rules", "generate_cms_like",
           "generate_cms_like_dataset", "cms_like_planted_rules", "write_dataset",
           "write_samples", "main"]
