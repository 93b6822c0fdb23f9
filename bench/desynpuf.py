"""The stacked DE-SynPUF Beneficiary Summary years (2008, 2009, 2010) as one two-view dataset.

The data are read from ``<repo>/../shared/data/desynpuf`` (never copied into the
repository). The three yearly files cover the same beneficiaries, so the id column
``DESYNPUF_ID`` is suffixed with the year (``..._2008``) to keep the stacked ids unique.

The public schema is ``bench/desynpuf_schema.json``: the data owner's declaration of the
views, types, Boolean codes, categories and numeric domains (round domains above the observed
maxima; nothing in it is computed from the data at run time). Its ``file`` entries name the
stacked table this module builds in memory (``desynpuf_stacked.csv`` is never written).

Run ``python -m bench.desynpuf`` to load it and print its shape, and
``python -m bench.desynpuf --write-2008 DIR`` to make a dataset folder of the 2008 subset
(10,000 beneficiaries) in DIR, outside the repository: the loader reads a dataset's files only
from inside its folder, so the shared file is copied there beside the declaration
``bench/desynpuf_2008/schema.json`` (with its ``file`` entries pointed at the copy).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT.parent / "shared" / "data" / "desynpuf"
SCHEMA_PATH = Path(__file__).resolve().parent / "desynpuf_schema.json"
SCHEMA_2008_PATH = Path(__file__).resolve().parent / "desynpuf_2008" / "schema.json"
YEAR_FILES = {
    2008: "DE1_0_2008_Beneficiary_Summary_File_Sample_1_subset10k.csv",
    2009: "DE1_0_2009_Beneficiary_Summary_File_Sample_1_subset.csv",
    2010: "DE1_0_2010_Beneficiary_Summary_File_Sample_1_subset.csv",
}


def data_dir() -> Path:
    return DATA_DIR.resolve()


def missing_reason(directory: Path | None = None) -> str | None:
    """Why the dataset cannot be loaded (folder or a file absent), or None when it can."""
    directory = Path(directory) if directory is not None else data_dir()
    if not directory.is_dir():
        return (f"DE-SynPUF folder {directory} is absent (a fresh checkout has no "
                f"../shared/data); skipping the DE-SynPUF benchmark")
    absent = [f for f in YEAR_FILES.values() if not (directory / f).is_file()]
    if absent:
        return f"DE-SynPUF file(s) {', '.join(absent)} missing in {directory}; skipping"
    return None


def load_schema():
    from dpcore.data.schema import schema_from_dict

    return schema_from_dict(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")),
                            file=str(SCHEMA_PATH))


def stacked_frame(directory: Path | None = None):
    """The three years as one all-string table, ids suffixed by year (private data)."""
    import pandas as pd

    directory = Path(directory) if directory is not None else data_dir()
    frames = []
    for year, name in YEAR_FILES.items():
        frame = pd.read_csv(directory / name, dtype=str, keep_default_na=False)
        frame["DESYNPUF_ID"] = frame["DESYNPUF_ID"] + f"_{year}"
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def load_desynpuf(directory: Path | None = None):
    """The stacked years as a :class:`~dpcore.data.dataset.TwoViewDataset` (one frame, both views).

    Raises FileNotFoundError (with :func:`missing_reason`'s message) when the data are absent.
    """
    from dpcore.data.loading import frames_to_dataset

    reason = missing_reason(directory)
    if reason:
        raise FileNotFoundError(reason)
    return frames_to_dataset(load_schema(), stacked_frame(directory), None,
                             left_file="stacked DE-SynPUF Beneficiary Summary 2008-2010",
                             schema_file=str(SCHEMA_PATH))


def write_2008_folder(target: Path, directory: Path | None = None) -> Path:
    """Write a dataset folder of the 2008 subset in ``target`` (outside the repository).

    The folder holds ``schema.json`` (the declaration of ``bench/desynpuf_2008``, its files
    renamed to the copy) and a copy of the shared 2008 file. Private-data handling is the
    caller's: the copy is as sensitive as the shared file.
    """
    target = Path(target).resolve()
    if target == REPO_ROOT or REPO_ROOT in target.parents:
        raise ValueError(f"{target} is inside the repository; reference data are never "
                         f"copied into it")
    source = (Path(directory) if directory is not None else data_dir()) / YEAR_FILES[2008]
    if not source.is_file():
        raise FileNotFoundError(f"DE-SynPUF 2008 file {source} is absent")
    declaration = json.loads(SCHEMA_2008_PATH.read_text(encoding="utf-8"))
    for view in declaration["views"].values():
        view["file"] = source.name
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target / source.name)
    (target / "schema.json").write_text(json.dumps(declaration, indent=1) + "\n",
                                        encoding="utf-8")
    return target


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.desynpuf", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write-2008", metavar="DIR", type=Path,
                        help="write a dataset folder of the 2008 subset in DIR (outside "
                             "the repository) and exit")
    args = parser.parse_args(argv)
    if args.write_2008 is not None:
        try:
            folder = write_2008_folder(args.write_2008)
        except (ValueError, FileNotFoundError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"wrote {folder} (schema.json and the 2008 file)")
        return 0
    reason = missing_reason()
    if reason:
        print(reason, file=sys.stderr)
        return 0
    ds = load_desynpuf()
    print(f"DE-SynPUF stacked: {ds.n_rows} rows; left {ds.views[0].n_attributes} attributes, "
          f"right {ds.views[1].n_attributes} attributes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
