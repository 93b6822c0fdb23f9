"""How close to uniform Serenade's initial-pair draws are, on the public samples and a wide shape.

An owner-side measurement on public data (true scores of every literal pair; nothing here is
released): for each dataset and ε, the exact distribution of the exponential mechanism's
initial-pair draw (the miner's factor ε_draw/(2Δf) at the true row count), its mean true
quality f against a uniform draw's and the best pair's, the real probability of landing among
the best 1 % of pairs, and the public bound the launch form states
(:mod:`dpcore.redescriptions.serenade.selection`). Variants show what would change it:
one-sided numeric literals only (A ≤ t or A > t: 2B instead of (B + 1)(B + 2)/2 − 1 per
attribute) and fewer initial pairs (I = 5: four times the ε per draw).

    python -m bench.serenade_selection            # clinic and the 2,500 × 250 shape, ≈ 30 s
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from dpcore.data.loading import load_dataset
from dpcore.data.samples import generate_cms_like_dataset
from dpcore.data.schema import NUMERIC
from dpcore.redescriptions.mining import strict_coding
from dpcore.redescriptions.params import family_type
from dpcore.redescriptions.serenade.kernels import pair_scores
from dpcore.redescriptions.serenade.literals import literal_set
from dpcore.redescriptions.serenade.quality import quality_sensitivity
from dpcore.redescriptions.serenade.selection import DrawStrength, serenade_selection
from dpcore.registry import SERENADE_ES

REPO = Path(__file__).resolve().parents[1]
STEEPNESS = 0.02
BUDGET_INIT = 0.45


def _dataset(name: str):
    if name == "wide":      # the interactive 2,500 × 250 case of bench/settings.py
        return generate_cms_like_dataset(2500, n_bool=190, n_numeric=60, seed=20232)
    return load_dataset(REPO / "sample_data" / name)


def pair_qualities(dataset) -> tuple[np.ndarray, np.ndarray]:
    """True f of every (left literal, right literal) pair, and whether both are one-sided."""
    coded = strict_coding(dataset)
    lits = [literal_set(c) for c in coded]
    one_sided = []
    for c, ls in zip(coded, lits):
        top = c.n_codes[ls.attr] - 1
        numeric = np.array([c.view.attributes[a].type == NUMERIC for a in ls.attr])
        one_sided.append(~numeric | (ls.lo == 0) | (ls.hi == top))
    x0 = 0.1 * dataset.n_rows
    scores, keep = [], []
    left, right = lits
    for a in range(left.start.size - 1):
        la0, la1 = left.start[a], left.start[a + 1]
        for b in range(right.start.size - 1):
            lb0, lb1 = right.start[b], right.start[b + 1]
            s = np.empty((la1 - la0) * (lb1 - lb0))
            pair_scores(coded[0].codes[a], coded[0].n_codes[a], left.lo[la0:la1],
                        left.hi[la0:la1], coded[1].codes[b], coded[1].n_codes[b],
                        right.lo[lb0:lb1], right.hi[lb0:lb1], STEEPNESS, x0, s)
            scores.append(s)
            keep.append(np.outer(one_sided[0][la0:la1], one_sided[1][lb0:lb1]).ravel())
    return np.concatenate(scores), np.concatenate(keep)


def draw_row(f: np.ndarray, factor: float, bound: float) -> dict:
    f = f[np.isfinite(f)]
    w = np.exp(factor * (f - f.max()))
    p = w / w.sum()
    g = max(1, math.floor(0.01 * f.size))
    best = np.argpartition(-f, g - 1)[:g]
    return {"pairs": f.size, "f_best": f.max(), "f_drawn": float(p @ f), "f_uniform": f.mean(),
            "top1": float(p[best].sum()), "bound": bound}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="clinic,wide")
    ap.add_argument("--epsilons", default="0.1,1,10")
    args = ap.parse_args(argv)
    print("| data | literals | I | ε | pairs | best f | mean f drawn | uniform | P(best 1 %) "
          "| public bound |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets.split(","):
        ds = _dataset(name)
        f, one_sided = pair_qualities(ds)
        delta = quality_sensitivity(ds.n_rows, STEEPNESS)
        for eps in (float(e) for e in args.epsilons.split(",")):
            params = family_type(SERENADE_ES)(algorithm=SERENADE_ES, epsilon=eps).validate()
            public = serenade_selection(ds.schema, params).initial
            for literals, mask in (("all", None), ("one-sided", one_sided)):
                for pairs in (20, 5):
                    e_draw = BUDGET_INIT * eps / pairs
                    scores = f if mask is None else f[mask]
                    bound = DrawStrength("initial pair", e_draw, int(np.isfinite(scores).sum()),
                                         e_draw / math.tanh(STEEPNESS / 2)).top_share_bound()
                    if literals == "all" and pairs == 20:
                        assert math.isclose(bound, public.top_share_bound(), rel_tol=1e-6)
                    r = draw_row(scores, e_draw / (2 * delta), bound)
                    print(f"| {name} | {literals} | {pairs} | {eps:g} | {r['pairs']:,} | "
                          f"{r['f_best']:.3f} | {r['f_drawn']:.3f} | {r['f_uniform']:.3f} | "
                          f"{r['top1']:.3f} | {r['bound']:.3f} |")


if __name__ == "__main__":
    main()
