"""extractReds on a 16 × 16 noisy leaf table: the post-processing every tree run ends with.

Run from the repository root (not part of the test suite)::

    .venv/bin/python -m bench.extract_speed

Prints the best of 5 timed calls (after one warm-up call) with the machine's load.
Target: < 0.05 s (the interactive case runs one extraction per trial).
"""

from __future__ import annotations

import os
import time

import numpy as np

from dpcore.redescriptions.extract import extract_redescriptions
from dpcore.redescriptions.params import TreeParams
from dpcore.redescriptions.results import Condition, TreeNode, TreeRecord

TARGET_S = 0.05


def flat_tree(m: int, prefix: str, view: int) -> TreeRecord:
    """A released tree whose root has ``m`` Boolean leaves ``prefix0 … prefix{m-1}``."""
    leaves = tuple((Condition(f"{prefix}{i}", "is", True),) for i in range(m))
    root = TreeNode(0, -1, 0, "split", "multiway", None, tuple(range(1, m + 1)), None)
    nodes = (root,) + tuple(TreeNode(i + 1, 0, 1, None, None, None, (), c[0], leaf=i)
                            for i, c in enumerate(leaves))
    return TreeRecord(view, view, 0, 0, nodes, leaves)


def main() -> int:
    rng = np.random.default_rng(0)
    table = rng.poisson(rng.gamma(0.5, 60.0, size=(16, 16))) + rng.laplace(0, 2, (16, 16))
    params = TreeParams(min_support=0)
    left, right = flat_tree(16, "L", 0), flat_tree(16, "R", 1)

    def once() -> float:
        start = time.perf_counter()
        extract_redescriptions(np.asarray(table, dtype=float), params=params, left_tree=left,
                               right_tree=right, left_tree_index=0, right_tree_index=1,
                               trial=0, step=0, extraction=0)
        return time.perf_counter() - start

    once()
    best = min(once() for _ in range(5))
    load = os.getloadavg()
    print(f"extractReds 16 × 16: best of 5 = {best * 1000:.1f} ms (target < "
          f"{TARGET_S * 1000:.0f} ms: {'met' if best < TARGET_S else 'NOT met'}); "
          f"load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
