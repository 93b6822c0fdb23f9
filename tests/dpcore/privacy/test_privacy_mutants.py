"""The privacy mutation score: every planted bug of ``tests/support/privacy_mutants.py`` must
make at least one privacy test fail (docs/PRIVACY.md §13, "Mutants").

For each mutant the family's cheap detectors run in-process with the mutant applied — the replay
checks of ``tests/dpcore/privacy/test_audit_replay.py`` (the mutant's family, two seeds) and,
for the sampling cores, the exact checks of ``tests/dpcore/privacy/test_mechanisms_exact.py``. A
mutant is caught when a detector raises ``AssertionError``; any other exception means the mutant
broke the run instead of planting a silent bug, and fails this test. The table of which check
caught which mutant and the score caught / planted are printed; the score must be 100 %.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from tests.dpcore.privacy import test_audit_replay as replay
from tests.dpcore.privacy import test_mechanisms_exact as exact
from tests.support.privacy_mutants import CATALOGUE, MECHANISMS, Mutant

FAMILIES = list(replay.REPLAY_CASES) + [MECHANISMS]


def detectors(mutant: Mutant):
    if mutant.family == MECHANISMS:
        return exact.DETECTORS
    return replay.DETECTORS[mutant.family]


def run_mutant(mutant: Mutant) -> tuple[list[str], list[str]]:
    """(messages of the detectors that failed, errors that were not assertion failures)."""
    caught, errors = [], []
    for detector in detectors(mutant):
        name = getattr(detector, "__name__", "check")
        with mutant.plant():
            try:
                detector()
            except AssertionError as exc:
                caught.append(f"{name}: {str(exc).splitlines()[0][:160]}")
            except Exception as exc:  # noqa: BLE001 - reported, and fails the test
                errors.append(f"{name}: {type(exc).__name__}: {exc}")
    return caught, errors


def test_the_catalogue_covers_every_family_and_kind():
    """≥ 3 mutants per family and per mechanism, ≥ 30 in all, every kind of the issue."""
    names = [m.name for m in CATALOGUE]
    assert len(names) == len(set(names)) and len(names) >= 30
    by_family = Counter(m.family.replace("-groups", "") for m in CATALOGUE)
    assert all(by_family[f.replace("-groups", "")] >= 3 for f in FAMILIES), by_family
    by_mechanism = Counter(m.mechanism for m in CATALOGUE)
    assert min(by_mechanism.values()) >= 3 and len(by_mechanism) == 3, by_mechanism
    kinds = Counter(m.kind for m in CATALOGUE)
    assert {"scale", "sensitivity", "hotter", "branch", "split", "stream"} <= set(kinds), kinds
    assert all(n >= 3 for k, n in kinds.items() if k != "revert"), kinds


def test_detectors_pass_without_a_mutant():
    for family in FAMILIES:
        for detector in (exact.DETECTORS if family == MECHANISMS else replay.DETECTORS[family]):
            detector()


#: Where the score line waits for the end of the session (printed in the terminal summary by
#: ``conftest.pytest_terminal_summary``, so a quiet ``-q`` run still shows it).
SCORE_KEY = pytest.StashKey[str]()


@pytest.mark.slow
def test_every_planted_privacy_bug_is_caught(request):
    started = time.process_time()
    rows, missed, broken = [], [], []
    for mutant in CATALOGUE:
        caught, errors = run_mutant(mutant)
        rows.append(f"{mutant.name:44s} {mutant.kind:11s} "
                    f"{'CAUGHT' if caught else 'missed'}  {caught[0] if caught else ''}")
        if errors:
            broken.append(f"{mutant.name}: {errors}")
        if not caught:
            missed.append(mutant.name)
    score = (len(CATALOGUE) - len(missed)) / len(CATALOGUE)
    print("\n[mutants] " + "\n[mutants] ".join(rows))
    line = (f"privacy mutation score: {len(CATALOGUE) - len(missed)}/{len(CATALOGUE)} "
            f"= {score:.0%} ({time.process_time() - started:.1f} s CPU)")
    print(f"[mutants] {line}")
    request.config.stash[SCORE_KEY] = line
    assert not broken, "mutants that crashed the run instead of planting a silent bug: " + \
        "; ".join(broken)
    assert not missed, f"privacy mutation score {score:.0%}: not caught: {missed}"
