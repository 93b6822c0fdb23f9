"""A compile worker of the warm-up: run the warm-up steps it is sent, one per line.

Started by :mod:`components.common.warmup` on a first start (empty numba cache) as
``python -m components.common.warmup_worker``. It reads step keys (``algorithm/mode``) from
stdin, runs each step (a miner on tiny data built in code, under a throwaway accountant:
no ledger, no dataset, no budget), which compiles its kernels into the shared numba cache,
and answers one line per step: ``done <key> <wall seconds>`` or ``error <key> <message>``.
It ends when stdin closes (the server ended or needs it no more).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def serve(commands: TextIO, answers: TextIO) -> int:
    """Run each step named on ``commands``, answering on ``answers``; 0 at the end."""
    from components.common.warmup import warmup_steps

    steps = {step.key: step for step in warmup_steps()}
    for line in commands:
        key = line.strip()
        if not key:
            continue
        started = time.perf_counter()
        try:
            steps[key].action()
        except Exception as exc:  # noqa: BLE001 - reported to the server, which retries
            answers.write(f"error {key} {type(exc).__name__}: {exc}\n")
        else:
            answers.write(f"done {key} {time.perf_counter() - started:.3f}\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(serve(sys.stdin, sys.stdout))
