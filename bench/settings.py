"""Benchmark settings: sizes, seeds, targets, and the settings benchmarked per algorithm
(the registry's presets)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from dpcore.registry import SERENADE_ALGORITHMS, STRICT

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "bench" / "results"

CMS_BASE_ROWS = 7_200          # CMS-2-k has 7,200·k rows
CMS_SIZES = (1, 2, 4, 8, 16)
CMS_BOOL, CMS_NUMERIC = 452, 152
INTERACTIVE = {"n_rows": 2_500, "n_bool": 190, "n_numeric": 60}
DATA_SEED = 20232
RUN_SEED = 7
MC_ITER, DEPTH = 10_000, 4
# phases of RunResult.diagnostics.phase_seconds besides "prepare"
TREE_PHASES = ("trees", "extract")
SERENADE_PHASES = ("initial pairs", "extensions", "quality")
NUMPY_MAX_K = 2                # the NumPy reference runs on k ≤ 2
NUMPY_ITER, NUMPY_BUDGET_S = 10_000, 60.0
CASE_TIMEOUT_S = 3_600
OTHER_BUSY_LIMIT = 0.25         # cores kept busy by other processes before a case is flagged
PARTS = ("cms", "desynpuf", "interactive", "startup", "numpy")

TARGET_FIT_S = 60.0            # per tree miner, paper parameters, CMS-2-16, 2 cores
TARGET_INTERACTIVE_S = 1.0     # 2,500 × 250, InTr 4, warm
TARGET_STARTUP_S = 2.0         # cached start-up
TARGET_PEAK_MB = 2_048.0       # CMS-2-16


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Algorithm settings
# ---------------------------------------------------------------------------

def is_serenade(algorithm: str) -> bool:
    return algorithm in SERENADE_ALGORITHMS


def _preset_setting(algorithm: str, preset, name: str) -> dict:
    return {"algorithm": algorithm, "name": name, "label": preset.label, **preset.overrides}


def settings_for(algorithm: str) -> list[dict]:
    """The parameter settings benchmarked for one algorithm: its registry presets named
    ``paper`` (MCMCTreePair: InTr 20, MCIter 10,000, d 4; Serenade: I 20, K 80 / L 4,
    s 0.02, split 0.45/0.45/0.1) or ``paper-stable`` / ``paper-default`` (the alternating
    miners: InTr 20, RMIter 1 and InTr 1, RMIter 20, MCIter 10,000, d 4)."""
    from dpcore.registry import algorithm_spec

    spec = algorithm_spec(algorithm)
    return [_preset_setting(algorithm, p, algorithm + p.name.removeprefix("paper"))
            for p in spec.presets if p.name == "paper" or p.name.startswith("paper-")]


def interactive_setting(algorithm: str) -> dict:
    """The setting of the "interactive 2,500 × 250" case: the registry preset
    ``interactive``, what the app runs by default (tree miners InTr 4, RMIter 1,
    MCIter 10,000, d 4; Serenade the paper's I 20, K 80 / L 4)."""
    from dpcore.registry import algorithm_spec, preset

    return _preset_setting(algorithm, preset(algorithm_spec(algorithm), "interactive"),
                           f"{algorithm}-interactive")


def params_of(setting: dict):
    """The validated parameters (the algorithm's family type) of a setting (ε = 1, strict):
    every parameter the setting names that its algorithm uses (from the registry); the rest
    keep their defaults."""
    from dpcore.redescriptions.params import family_type
    from dpcore.registry import algorithm_spec

    used = algorithm_spec(setting["algorithm"]).parameters_used(STRICT)
    return family_type(setting["algorithm"])(
        algorithm=setting["algorithm"], **{k: v for k, v in setting.items() if k in used}
    ).validate()


def tiny_params(algorithm: str, purpose: str) -> dict:
    """Keyword arguments of the tiny ``mine()`` (300 rows) that compiles or loads every kernel
    a miner uses: ``purpose`` "warm-up" (inside each case) or "startup" (start-up part)."""
    if is_serenade(algorithm):
        # two initial pairs and a few rounds reach every Serenade kernel
        return {"algorithm": algorithm, "init_pairs": 2,
                "es_rounds": 4, "cs_rounds": 2}
    if purpose == "warm-up":
        return {"algorithm": algorithm, "in_tr": 2, "rm_iter": 1, "mc_iter": 100,
                "depth": DEPTH}
    return {"algorithm": algorithm, "in_tr": 1, "mc_iter": 100}


def _machine_busy_s() -> float | None:
    """CPU seconds all processes have spent so far (user+nice+system+irq+softirq+steal)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        ticks = os.sysconf("SC_CLK_TCK")
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
        return (user + nice + system + irq + softirq + steal) / ticks
    except (OSError, ValueError, IndexError):
        return None


def wait_idle(max_wait: float) -> float:
    """Wait (at most ``max_wait`` s) until other processes use < OTHER_BUSY_LIMIT core over a
    1-second sample; return the seconds waited. A shared machine otherwise inflates times."""
    start = time.perf_counter()
    while time.perf_counter() - start < max_wait:
        b0 = _machine_busy_s()
        time.sleep(1.0)
        b1 = _machine_busy_s()
        if b0 is None or b1 is None or b1 - b0 < OTHER_BUSY_LIMIT:
            break
    return time.perf_counter() - start
