"""Where datasets live on the server, and how the app names those places without paths.

The server's file system is server configuration: no page shows an absolute path, not even
to owners (a screenshot or a shared screen would reveal it). A registered dataset is named
by where it is relative to a folder the app knows — the repository's sample data or the
upload folder — plus its file names; anything else is "a folder on the server". Error
messages shown on the Data page go through :func:`hide_server_paths`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from dpcore.data.loading import sample_data_dir
from dpcore.privacy.ledger import DatasetRecord, Ledger

__all__ = ["DATA_DIR_ENV", "data_root", "declared_files", "data_location_text",
           "ledger_location_text", "hide_server_paths"]

#: Environment variable naming the upload folder.
DATA_DIR_ENV = "DPRM_DATA_DIR"
SAMPLE_FOLDER, UPLOAD_FOLDER = "sample data", "upload folder"

# An absolute POSIX path (/a/b...) or Windows path (C:\a\b...) inside a message.
_ABSOLUTE = re.compile(r"(?<![\w.~/:])(?:[A-Za-z]:[\\/]|/)(?:[^\s'\"\\/]+[\\/])*"
                       r"[^\s'\"\\/]+")


def data_root(ledger: Ledger) -> Path:
    """Where uploaded datasets are stored: ``$DPRM_DATA_DIR``, else ``<ledger folder>/datasets``."""
    env = os.environ.get(DATA_DIR_ENV)
    return Path(env).expanduser() if env else ledger.folder / "datasets"


def _relative(path: Path, root: Path) -> str | None:
    for p, r in ((path, root), (path.resolve(), root.resolve())):
        try:
            return p.relative_to(r).as_posix()
        except ValueError:
            continue
    return None


#: The keys of a sequence schema's ``files`` that name files (the others name columns).
_SEQUENCE_FILE_KEYS = ("records", "alphabet", "events")


def declared_files(schema) -> list[str]:
    """The file names a schema of any kind declares, relative to its folder, sorted.

    Two-view tables: each view's file; sequence datasets: the records, alphabet or events
    file; labelled tables: the table file. Public to the owner only (they are the owner's
    names, not server paths).
    """
    views = getattr(schema, "views", None)
    if views is not None:
        return sorted({v.file for v in views if v.file})
    files = getattr(schema, "files", None)
    if isinstance(files, dict):
        return sorted({files[k] for k in _SEQUENCE_FILE_KEYS if files.get(k)})
    single = getattr(schema, "file", None)
    return [single] if single else []


def data_location_text(record: DatasetRecord, ledger: Ledger) -> str:
    """Where ``record``'s files are, in words and without server paths (markdown).

    ``sample data: clinic (diagnoses.csv, labs.csv)``, ``upload folder: uploaded (left.csv,
    right.csv)``, ``Python package sklearn (load_diabetes)``, or ``a folder on the server``.
    Any kind of dataset: the files are those its schema declares (:func:`declared_files`).
    """
    schema = record.schema
    source = getattr(schema, "source", None)
    if source is not None:
        return f"Python package `{source['package']}` (`{source['loader']}`)"
    files = declared_files(schema)
    listed = f" ({', '.join(f'`{f}`' for f in files)})" if files else ""
    if not record.source_path:
        return "no stored location"
    path = Path(record.source_path)
    for root, label in ((sample_data_dir(), SAMPLE_FOLDER), (data_root(ledger), UPLOAD_FOLDER)):
        rel = _relative(path, root)
        if rel is not None:
            return f"{label}: `{rel}`{listed}"
    return f"a folder on the server (its path is not shown){listed}"


def ledger_location_text() -> str:
    """Where the ledger is, in words: chosen by ``DPRM_LEDGER`` or the default (no path)."""
    if os.environ.get("DPRM_LEDGER"):
        return "Ledger: the file set by DPRM_LEDGER"
    return "Ledger: the default location (set DPRM_LEDGER to choose one)"


def hide_server_paths(text: str, ledger: Ledger) -> str:
    """``text`` with every absolute server path replaced by what a user may see.

    Paths under the sample data or the upload folder become ``sample data/…`` or
    ``upload folder/…``; any other absolute path is cut to its last component (a file or
    folder name, which the owner chose). Used on error messages before they are shown.
    """
    roots = []
    for root, label in ((sample_data_dir(), SAMPLE_FOLDER), (data_root(ledger), UPLOAD_FOLDER),
                        (ledger.folder, "ledger folder")):
        for form in {str(root), str(root.resolve())}:
            roots.append((form.rstrip("/\\"), label))
    roots.sort(key=lambda item: len(item[0]), reverse=True)

    def shorten(match: re.Match) -> str:
        path = match.group(0)
        for root, label in roots:
            if path == root:
                return label
            if path.startswith(root) and path[len(root)] in "/\\":
                return label + "/" + path[len(root) + 1:].replace("\\", "/")
        parts = [p for p in re.split(r"[\\/]", path) if p and not p.endswith(":")]
        return parts[-1] if parts else "…"

    return _ABSOLUTE.sub(shorten, text)
