"""The owner's upload of a sequence dataset on the Data page (mined by PFS2 on *Sequences*).

Owner only. Two layouts, as ``python -m dpcore register`` reads them
(:mod:`dpcore.data.sequences.schema`):

* **records file + alphabet file**: one record per line of space-separated item names, and
  the declared alphabet, one item name per line;
* **event table** (CSV or Parquet): one row per event; the record id, order key and item
  columns are chosen from the file's header. The alphabet is declared by the owner, typed one
  item per line, or prefilled from the item column — an OWNER-SIDE step: those items are
  read from the private data (a rare item reveals that some record holds it), so the page
  says so and the owner confirms the declaration when registering.

With the public l1 bound (the longest record length PFS2's sample databases keep, in items),
the public demo flag and the budget cap ε, Register stores the files and a
``sequence_schema.json`` in the upload folder and registers the dataset through
:func:`dpcore.privacy.registration.register_upload`: the files are read by the sequence
loaders first, and bad input (an item outside the alphabet, an empty file, a missing value,
a bad l1, a cap ≤ 0) shows the loader's message naming the file, line or row and reason,
and registers nothing. A bad or taken dataset name is said as soon as it is typed, and
Register stays disabled until it is changed. No parsing happens here.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import streamlit as st

from dpcore.data.names import path_inside
from dpcore.data.sequences.loading import observed_items, read_alphabet_file
from dpcore.data.sequences.schema import EVENTS, LINES, SequenceSchema
from dpcore.errors import DataError, ParameterError
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.registration import check_name_free, register_upload

from ..common.budget_meter import fmt_eps
from ..common.data_locations import data_root, hide_server_paths
from ..common.upload_register import register_and_announce

__all__ = ["read_declared_alphabet", "event_columns", "prefill_alphabet",
           "sequence_upload", "render_sequence_upload"]

#: Session-state key of the alphabet prefilled from the data (owner only; private).
PREFILL_KEY = "seq_prefilled"
_TABLE_TYPES = ["csv", "tsv", "parquet", "pq"]


def _on_disk(tmp: str, name: str, content: bytes) -> Path:
    path = path_inside(tmp, Path(name).name, what="the uploaded file name")
    path.write_bytes(content)
    return path


def read_declared_alphabet(name: str, content: bytes) -> tuple[str, ...]:
    """The alphabet an uploaded (or typed) alphabet file declares, read by the sequence loader
    (DataError naming the file and line of an empty, doubled or spaced name)."""
    with tempfile.TemporaryDirectory() as tmp:
        return read_alphabet_file(_on_disk(tmp, name, content), label=Path(name).name)


def event_columns(name: str, content: bytes) -> tuple[str, ...]:
    """The header of an uploaded event table (DataError if it cannot be read)."""
    with tempfile.TemporaryDirectory() as tmp:
        return observed_items(_on_disk(tmp, name, content), label=Path(name).name)[0]


def prefill_alphabet(name: str, content: bytes, item_column: str) -> tuple[str, ...]:
    """OWNER ONLY: the distinct items of an event table's item column (private data, for the
    owner to review before declaring them public)."""
    with tempfile.TemporaryDirectory() as tmp:
        return observed_items(_on_disk(tmp, name, content), item_column,
                              label=Path(name).name)[1]


def sequence_upload(ledger: Ledger, *, name: str, layout: str, files: dict[str, bytes],
                    alphabet: tuple[str, ...], l1, public_demo: bool, cap,
                    columns: dict[str, str] | None = None, description: str = ""):
    """Build the sequence schema and register the upload, all or nothing.

    Parameters
    ----------
    ledger : Ledger
        Where to register.
    name : str
        Dataset name (a folder under the upload folder: no path separators).
    layout : {"lines", "events"}
        Records file + alphabet file, or one event table.
    files : dict of str to bytes
        ``lines``: the records file then the alphabet file; ``events``: the event table.
    alphabet : tuple of str
        The declared alphabet (public), in code order.
    l1 : int
        Public bound on the record length kept in PFS2's sample databases (items).
    public_demo : bool
        Synthetic or public data.
    cap : float
        Total budget cap ε.
    columns : dict, optional
        ``events``: ``record_column``, ``order_column``, ``item_column``.
    description : str
        Public free text.

    Returns
    -------
    (kind, record)
        See :func:`dpcore.privacy.registration.register_upload`.

    Raises
    ------
    DataError, ParameterError
        Naming the file, line or row and reason; nothing is registered or stored.
    """
    names = list(files)
    if layout == LINES:
        if len(names) != 2:
            raise DataError("upload the records file and the alphabet file (two different "
                            "file names)")
        spec = {"format": LINES, "records": names[0], "alphabet": names[1]}
    else:
        if len(names) != 1:
            raise DataError("upload the event table")
        spec = {"format": EVENTS, "events": names[0], **(columns or {})}
    if isinstance(l1, float) and l1.is_integer():
        l1 = int(l1)
    schema = SequenceSchema(name=name, alphabet=tuple(alphabet), l1=l1,
                            public_demo=bool(public_demo), description=description,
                            provenance="uploaded on the Data page", files=spec)
    schema.validate()
    return register_upload(ledger, data_root(ledger), name, files, schema, cap=cap)


def _event_step(uploaded, ledger: Ledger) -> tuple[dict | None, tuple[str, ...] | None]:
    """Column choice and alphabet declaration for an event table."""
    content = uploaded.getvalue()
    try:
        header = event_columns(uploaded.name, content)
    except DataError as exc:
        st.error(f"Nothing was registered. {hide_server_paths(str(exc), ledger)}")
        return None, None
    c1, c2, c3 = st.columns(3)
    record = c1.selectbox("Record id column", header, index=0, key="seq_rec_col")
    order = c2.selectbox("Order key column (numbers or ISO timestamps)", header,
                         index=min(1, len(header) - 1), key="seq_order_col")
    item = c3.selectbox("Item column", header, index=len(header) - 1, key="seq_item_col")
    if st.button("Prefill the alphabet from the item column (owner only)",
                 key="seq_prefill"):
        try:
            items = prefill_alphabet(uploaded.name, content, item)
        except DataError as exc:
            st.error(f"Nothing was registered. {hide_server_paths(str(exc), ledger)}")
        else:
            st.session_state["seq_alphabet_text"] = "\n".join(items)
            st.session_state[PREFILL_KEY] = True
            st.rerun()
    if st.session_state.get(PREFILL_KEY):
        st.warning("The alphabet below was PREFILLED FROM THE PRIVATE DATA: a rare item "
                   "reveals that some record holds it. Review it before registering — add "
                   "every item that could occur, remove what must not be public — then "
                   "confirm it with *Confirm the declaration and register*.")
    text = st.text_area("Declared alphabet (public): one item name per line, in code order",
                        key="seq_alphabet_text", height=150)
    alphabet = None
    if not text.strip():        # nothing typed yet: nothing to complain about
        st.caption("Type the alphabet or prefill it from the item column; Register waits "
                   "for it.")
    else:
        try:
            alphabet = read_declared_alphabet("alphabet", text.encode("utf-8"))
        except DataError as exc:
            st.caption("The alphabet is not valid yet: "
                       f"{hide_server_paths(str(exc), ledger)}")
    return {"record_column": record, "order_column": order, "item_column": item}, alphabet


def render_sequence_upload(ledger: Ledger) -> None:
    """Owner: upload a sequence dataset, declare its alphabet, l1 and cap, register it."""
    name = st.text_input("Dataset name", key="seq_name")
    name_ok = True
    if name.strip():      # a taken or bad name is said at once, not after the declaration
        try:
            check_name_free(ledger, data_root(ledger), name.strip())
        except ParameterError as exc:
            st.error(f"Nothing was registered. {exc}")
            name_ok = False
    layout = st.radio("Layout", (LINES, EVENTS), key="seq_layout", horizontal=True,
                      format_func={LINES: "records file + alphabet file",
                                   EVENTS: "event table (record, order, item columns)"}.get)
    columns, alphabet, files = None, None, {}
    if layout == LINES:
        c1, c2 = st.columns(2)
        records = c1.file_uploader("Records file: one record per line, items separated by "
                                   "spaces", key="seq_records")
        alpha = c2.file_uploader("Alphabet file: the declared item names, one per line",
                                 key="seq_alphabet")
        files = {Path(u.name).name: u.getvalue() for u in (records, alpha) if u is not None}
        ready = records is not None and alpha is not None
    else:
        events = st.file_uploader("Event table (CSV or Parquet)", type=_TABLE_TYPES,
                                  key="seq_events")
        ready = events is not None
        if events is not None:
            files = {Path(events.name).name: events.getvalue()}
            columns, alphabet = _event_step(events, ledger)
            ready = columns is not None and alphabet is not None
    c1, c2, c3 = st.columns(3)
    l1 = c1.number_input("l1: longest record length kept (items, public)", value=8, step=1,
                         key="seq_l1")
    cap = c2.number_input("Total budget cap ε", value=10.0, step=1.0, format="%.3f",
                          key="seq_cap")
    public_demo = c3.checkbox("Public demo (synthetic or public data)", key="seq_demo")
    description = st.text_input("Description (public)", key="seq_description")
    if st.button("Confirm the declaration and register", type="primary", key="seq_register",
                 disabled=not (ready and name_ok)):
        def register() -> str:
            declared = alphabet
            if layout == LINES:
                if len(files) != 2:
                    raise DataError("the records file and the alphabet file need different "
                                    "names")
                declared = read_declared_alphabet(*list(files.items())[1])
            _, record = sequence_upload(ledger, name=name.strip(), layout=layout, files=files,
                                        alphabet=declared, l1=l1, public_demo=public_demo,
                                        cap=cap, columns=columns, description=description)
            return record.name

        register_and_announce(
            ledger, register,
            success=lambda name: f"Sequence dataset `{name}` is registered with ε = "
                                 f"{fmt_eps(cap)}; mine it on the Sequences page.",
            clear=(PREFILL_KEY, "seq_name"))  # the name is taken now
