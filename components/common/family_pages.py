"""Which page mines which kind of dataset, and what a page says on a dataset of another kind.

Every dataset has a kind (:data:`dpcore.registry.DATASET_KINDS`), and each kind is mined by
one family (:class:`dpcore.registry.DatasetKindSpec`), on one page of the app. A page of
one family, opened on a dataset of another kind, names the dataset's kind and the page
that mines it instead of offering a run the ledger would refuse.
"""

from __future__ import annotations

from dpcore.privacy.ledger import DatasetRecord
from dpcore.registry import DATASET_KIND_SPECS, REDESCRIPTIONS, SEQUENCES, SYNTHESIS

__all__ = ["FAMILY_PAGES", "page_for", "other_kind_text"]

#: The page that mines each family (its title in the app's navigation).
FAMILY_PAGES = {REDESCRIPTIONS: "Mine", SEQUENCES: "Sequences", SYNTHESIS: "Synthesis"}


def page_for(record: DatasetRecord) -> str | None:
    """The title of the page that mines ``record``'s kind (None for an unknown kind)."""
    kind = DATASET_KIND_SPECS.get(record.kind)
    return FAMILY_PAGES.get(kind.family) if kind else None


def other_kind_text(record: DatasetRecord) -> str:
    """``"`name` holds a sequence dataset: use the **Sequences** page for it."``"""
    kind = DATASET_KIND_SPECS.get(record.kind)
    label = kind.label if kind else str(record.kind)
    page = page_for(record)
    return f"`{record.name}` holds a {label}" + (
        f": use the **{page}** page for it." if page else ".")
