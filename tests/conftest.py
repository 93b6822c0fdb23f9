"""Shared fixtures: the shipped synthetic clinic dataset and the reference-data folder."""

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def clinic_dataset():
    """sample_data/clinic loaded with dpcore.data.loading.load_dataset (public demo data)."""
    from dpcore.data.loading import load_dataset

    return load_dataset(REPO_ROOT / "sample_data" / "clinic")


@pytest.fixture(scope="session")
def shared_data_dir():
    """The reference datasets folder ../shared/data next to the repository (present in CI)."""
    path = (REPO_ROOT / ".." / "shared" / "data").resolve()
    if not path.is_dir():
        pytest.skip(f"reference data folder {path} is absent (a fresh checkout has no "
                    f"../shared/data; CI provides it)")
    return path


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels():
    """Compile every miner's kernels once per test session, before the first test.

    The suite starts from an empty numba cache (tests/run.sh), so this is also the cold
    start-up check; afterwards no test pays for compilation, and timings stay comparable.
    """
    from dpcore.redescriptions.warmup import warm_kernels

    return warm_kernels()
