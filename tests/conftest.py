"""Shared fixtures: the shipped synthetic clinic dataset and the reference-data folder."""

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def clinic_dataset():
    """sample_data/clinic loaded with dpcore.loading.load_dataset (public demo data)."""
    from dpcore.loading import load_dataset

    return load_dataset(REPO_ROOT / "sample_data" / "clinic")


@pytest.fixture(scope="session")
def shared_data_dir():
    """The reference datasets folder ../shared/data next to the repository (present in CI)."""
    path = (REPO_ROOT / ".." / "shared" / "data").resolve()
    if not path.is_dir():
        pytest.skip(f"reference data folder {path} is absent (a fresh checkout has no "
                    f"../shared/data; CI provides it)")
    return path
