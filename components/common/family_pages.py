"""Which page mines which kind of dataset, and what a page says on a dataset of another kind.

Every dataset has a kind (:data:`dpcore.registry.DATASET_KINDS`), and each kind is mined by
one family, on one page of the app: its :class:`~components.common.family_ui.FamilyUI`'s
``mining_page``. A page of one family, opened on a dataset of another kind, names the
dataset's kind and the page that mines it, with a link to it, instead of offering a run the
ledger would refuse.
"""

from __future__ import annotations

import streamlit as st

from dpcore.errors import ParameterError
from dpcore.family import dataset_kind
from dpcore.privacy.ledger import DatasetRecord

from .family_ui import ui_for_kind

__all__ = ["page_for", "other_kind_text", "render_other_kind"]


def page_for(record: DatasetRecord) -> str | None:
    """The title of the page that mines ``record``'s kind (None for an unknown kind)."""
    ui = ui_for_kind(record.kind)
    return ui.mining_page if ui is not None else None


def other_kind_text(record: DatasetRecord) -> str:
    """``"`name` holds a sequence dataset: use the **Sequences** page for it."``"""
    try:
        label = dataset_kind(record.kind).label
    except ParameterError:
        label = str(record.kind)
    page = page_for(record)
    return f"`{record.name}` holds a {label}" + (
        f": use the **{page}** page for it." if page else ".")


def render_other_kind(record: DatasetRecord, before: str = "", after: str = "") -> None:
    """Say which page mines ``record`` (:func:`other_kind_text` between ``before`` and
    ``after``) and link to it, so the user need not look for it in the navigation."""
    st.info(" ".join(t for t in (before, other_kind_text(record), after) if t))
    ui = ui_for_kind(record.kind)
    page = next((p for p in ui.pages if p.title == ui.mining_page and isinstance(p.page, str)),
                None) if ui is not None else None
    if page is not None:
        st.page_link(page.page, label=f"Open {page.title}", icon=page.icon)
