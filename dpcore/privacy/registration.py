"""Registering a dataset of any kind with the ledger, all or nothing (owner only).

Two entry points share one path, so a dataset registered from the Data page's upload, from
``python -m dpcore register`` or from the Python API is stored and recorded the same way and
is minable from all three:

* :func:`register_folder` — a dataset folder that already holds its schema file
  (``schema.json``/``.toml``, ``sequence_schema.json`` or ``synthesis_schema.json``): the
  data are read with that schema through the kind's loader
  (:func:`dpcore.data.kinds.load_any_dataset`; a two-view dataset's files are streamed into
  columnar partitions, :mod:`dpcore.data.partitions`), their content digest is computed
  (:func:`dpcore.privacy.policy.content_digest`) and the dataset is registered with its
  schema *confirmed* — the schema file is the owner's written declaration of what is public.
* :func:`register_upload` — uploaded files (name → bytes) and the schema the owner reviewed:
  they are written to a staging folder and read there by the same loaders (so a bad file is
  refused naming the file, line or row and reason, before anything is stored), then moved to
  ``<data root>/<name>/`` with the schema file beside them — the layout ``register`` reads —
  and registered through :func:`register_folder`. Any failure removes the folder: no file is
  left in the data root and no ledger row is written.

Nothing here is a release: the loaders read private data and only the owner calls this. The
dataset name is checked by :func:`dpcore.data.names.check_dataset_name` (it names a folder)
and every file name by :func:`dpcore.data.names.path_inside`.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from dpcore.data.kinds import (
    kind_of_schema,
    load_any_dataset,
    load_any_schema,
    load_registered_data,
    schema_to_dict,
)
from dpcore.data.names import check_dataset_name, path_inside
from dpcore.data.partitions import ensure_partitions
from dpcore.errors import DataError, ParameterError
from dpcore.privacy.ledger import DatasetRecord, Ledger
from dpcore.privacy.policy import content_digest
from dpcore.registry import KIND_SEQUENCES, KIND_TABLE, KIND_TWO_VIEW, dataset_kind_spec

__all__ = ["register_folder", "register_upload", "check_cap", "check_name_free",
           "schema_file_name"]


def check_cap(cap) -> float:
    """A total budget cap ε: a finite number > 0 (ParameterError naming the value otherwise)."""
    if isinstance(cap, bool) or not isinstance(cap, (int, float)) \
            or not math.isfinite(float(cap)) or float(cap) <= 0:
        raise ParameterError(f"the budget cap ε must be a finite number > 0; got {cap!r}")
    return float(cap)


def schema_file_name(schema) -> str:
    """The file name a schema of this kind is stored under in a dataset folder."""
    return dataset_kind_spec(kind_of_schema(schema)).schema_files[0]


def register_folder(ledger: Ledger, folder, *, cap, name: str | None = None,
                    actor: str = "owner") -> tuple[str, DatasetRecord]:
    """Register the dataset folder ``folder`` (any kind) with a total budget ``cap`` (ε).

    Parameters
    ----------
    ledger : Ledger
        Where the dataset, its confirmed schema, cap and content digest are recorded.
    folder : str or Path
        A dataset folder holding a schema file of one kind (or the schema file itself).
    cap : float
        Total ε the dataset may ever spend (> 0).
    name : str, optional
        Dataset name in the ledger (default: the schema's name).
    actor : str
        Who registers (audit).

    Returns
    -------
    (kind, record)
        The dataset kind and the new ledger record (schema confirmed).

    Raises
    ------
    DataError
        No schema file, or the data do not fit it (file, line or row, reason).
    ParameterError
        A bad cap, or a bad or taken name. Nothing is registered.
    """
    check_cap(cap)
    kind, schema = load_any_schema(folder)
    digest = _registered_digest(kind, folder, schema)
    name = schema.name if name is None else name
    record = ledger.register_dataset(name, schema, str(Path(folder).resolve()), cap,
                                     actor=actor, confirmed=True, content_digest=digest)
    return kind, record


def _registered_digest(kind: str, folder, schema) -> str:
    """The content digest of the folder's data, checked against ``schema``.

    Every kind's files are streamed into its partitions (:mod:`dpcore.data.partitions`,
    :mod:`dpcore.data.table.partitions`, :mod:`dpcore.data.sequences.partitions`), whose
    manifest holds the digest: the data are never held whole. Data that are not partitioned
    (a package source) are loaded and hashed.
    """
    manifest = _ENSURE[kind](folder, schema)
    if manifest is not None:
        return manifest.content_digest
    return content_digest(load_registered_data(kind, folder, schema))


def _ensure_table(folder, schema):
    from dpcore.data.table.partitions import ensure_table_partitions

    return ensure_table_partitions(folder, schema)


def _ensure_sequences(folder, schema):
    from dpcore.data.sequences.partitions import ensure_sequence_partitions

    return ensure_sequence_partitions(folder, schema)


#: Each kind's registration: its files into partitions (the manifest), or None.
_ENSURE = {KIND_TWO_VIEW: ensure_partitions, KIND_TABLE: _ensure_table,
           KIND_SEQUENCES: _ensure_sequences}


def check_name_free(ledger: Ledger, root, name: str) -> str:
    """Check that ``name`` is a valid dataset name that no dataset and no upload folder holds.

    The upload steps call this before reading any file, so a taken name is refused at the
    first step rather than after the owner reviewed a schema; :func:`register_upload` calls
    it again (the name may have been taken since).

    Parameters
    ----------
    ledger : Ledger
        Where registered names are looked up.
    root : str or Path
        The upload folder (``root/name`` must not exist).
    name : str
        The dataset name.

    Returns
    -------
    str
        ``name`` unchanged.

    Raises
    ------
    ParameterError
        A bad name (:func:`dpcore.data.names.check_dataset_name`), a registered one, or one
        whose folder exists in ``root`` — each saying to choose another name.
    """
    check_dataset_name(name)
    try:
        ledger._dataset_record(name)
    except ParameterError:
        pass
    else:
        raise ParameterError(f"a dataset named {name!r} already exists; choose another name")
    if path_inside(root, name, what="dataset name", error=ParameterError).exists():
        raise ParameterError(f"the upload folder already holds a folder named {name!r}; "
                             "choose another name")
    return name


def register_upload(ledger: Ledger, root, name: str, files: Mapping[str, bytes], schema, *,
                    cap, actor: str = "owner") -> tuple[str, DatasetRecord]:
    """Store uploaded files with their reviewed schema under ``root/name`` and register them.

    All or nothing: the name, the cap and the file names are checked before anything is
    written; the files are read by the kind's loader in a staging folder outside ``root``
    first (a DataError then names the uploaded file, not a server folder); only data that
    load are moved to ``root/name`` and registered. On any failure the folder is removed.

    Parameters
    ----------
    ledger : Ledger
        The ledger to register in.
    root : str or Path
        The upload folder (the app's ``DPRM_DATA_DIR``).
    name : str
        Dataset name: the ledger row and the folder under ``root``.
    files : mapping of str to bytes
        Uploaded file name → content; the names are those the schema's ``files`` / ``file``
        / views refer to.
    schema : Schema, SequenceSchema or TableSchema
        The schema the owner reviewed (its ``name`` must be ``name``); written beside the
        files as the kind's schema file.
    cap : float
        Total ε the dataset may ever spend (> 0).
    actor : str
        Who registers (audit).

    Returns
    -------
    (kind, record)
        As :func:`register_folder`.

    Raises
    ------
    ParameterError
        A bad or taken name, a name whose folder exists already, a bad cap.
    DataError
        A bad file name, a schema of no known kind, or data that do not fit the schema
        (file, line or row, reason).
    """
    check_name_free(ledger, root, name)
    check_cap(cap)
    if getattr(schema, "name", None) != name:
        raise DataError(f"the schema is named {getattr(schema, 'name', None)!r}, not {name!r}")
    kind = kind_of_schema(schema)
    spec = dataset_kind_spec(kind)
    dest = path_inside(root, name, what="dataset name", error=ParameterError)
    schema_file = spec.schema_files[0]
    if schema_file in files:
        raise DataError(f"an uploaded file may not be named {schema_file!r} (the schema "
                        "file's name)", file=schema_file)
    text = json.dumps(schema_to_dict(kind, schema), indent=2, ensure_ascii=False)
    with tempfile.TemporaryDirectory(prefix="dprm-upload-") as tmp:
        stage = Path(tmp) / name
        stage.mkdir()
        for file, content in files.items():
            target = path_inside(stage, file, what="the uploaded file name")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        (stage / schema_file).write_text(text + "\n", encoding="utf-8")
        load_any_dataset(stage)              # bad data: refused before anything is stored
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            dest.mkdir()                     # ours from here on (fails if it appeared since)
        except FileExistsError:
            raise ParameterError(f"the upload folder already holds a folder named {name!r}; "
                                 "choose another name") from None
        try:
            shutil.copytree(stage, dest, dirs_exist_ok=True)
            return register_folder(ledger, dest, cap=cap, name=name, actor=actor)
        except BaseException:
            shutil.rmtree(dest, ignore_errors=True)
            raise
