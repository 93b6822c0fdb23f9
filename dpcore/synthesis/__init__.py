"""Private synthetic data: MC-GEN (Li, Zhuang & Chang 2022) as a DP-correct variant, the paper's
pipeline (labelled NOT DP) and the class-conditional independent-marginals floor.

Modules, one concept each:

* :mod:`~dpcore.data.table.schema` — the public schema of a labelled table (label classes,
  numeric features with public bounds, categoricals with declared levels) and its encoding;
* :mod:`~dpcore.data.table.table` — a loaded labelled table (clipped to the public bounds,
  clip counts for the owner), loading one CSV/Parquet file, encoding and decoding;
* :mod:`~dpcore.synthesis.fixedpoint` — the fixed-point grid that turns bounded reals into
  integers with integer sensitivities (strict mode draws integer noise only);
* :mod:`~dpcore.synthesis.params` — parameters, help texts and the exact budget plan;
* :mod:`~dpcore.synthesis.moments` — noisy per-cell counts, sums and second moments,
  Gaussian cell models with PSD repair by eigenvalue clipping;
* :mod:`~dpcore.synthesis.grouping` — feature groups (UPGMA + pairwise Davies–Bouldin) from
  DP sufficient statistics (strict) or raw Pearson correlations (faithful);
* :mod:`~dpcore.synthesis.cells` — the public grid that assigns each record to one cell;
* :mod:`~dpcore.synthesis.mdav` — MDAV microaggregation (faithful mode);
* :mod:`~dpcore.synthesis.mcgen` — MC-GEN-DP (strict) and MC-GEN as published (faithful);
* :mod:`~dpcore.synthesis.floor` — the floor baseline (independent noisy marginals per class);
* :mod:`~dpcore.synthesis.miner` — the entry points ``check_runnable`` and ``synthesize``;
* :mod:`~dpcore.synthesis.results` — the result type (JSON and Parquet);
* :mod:`~dpcore.synthesis.utility` — the paper's two classifier scenarios (owner/teaching,
  NOT private);
* :mod:`~dpcore.synthesis.samples` — generated sample tables (Pima-shaped, Adult-shaped).
"""

from dpcore.synthesis.contract import FAMILY

__all__ = ["FAMILY"]
