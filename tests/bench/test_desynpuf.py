"""bench.desynpuf: the 2008 dataset folder is written outside the repository and loads."""

from pathlib import Path

import pytest

from bench import desynpuf
from dpcore.data.loading import load_dataset

pytestmark = pytest.mark.skipif(desynpuf.missing_reason() is not None,
                                reason="the shared DE-SynPUF data are absent")


def test_written_2008_folder_loads_as_the_declared_two_views(tmp_path):
    folder = desynpuf.write_2008_folder(tmp_path / "ds2008")
    dataset = load_dataset(folder)
    assert dataset.n_rows == 10_000
    assert dataset.schema.name == "desynpuf_2008"
    assert [v.n_attributes for v in dataset.views] == [14, 13]


def test_2008_folder_is_never_written_inside_the_repository():
    inside = Path(desynpuf.REPO_ROOT) / "bench" / "never_written"
    with pytest.raises(ValueError, match="inside the repository"):
        desynpuf.write_2008_folder(inside)
    assert not inside.exists()
