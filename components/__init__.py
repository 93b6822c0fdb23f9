"""Streamlit building blocks of the workbench; the pages in ``pages/`` stay thin.

``common/`` holds what every page and family shares (and the :class:`FamilyUI` contract,
``common/family_ui.py``); ``redescriptions/``, ``sequences/`` and ``synthesis/`` hold one
family each, with its ``FamilyUI`` in ``ui.py``. ``common/`` imports no family folder.

Nothing here computes a DP release: mining goes through :func:`dpcore.runs.charge_and_mine`
(charged in the ledger before any noise), and every release shown is read back from the
ledger. DP releases are never put in ``st.cache_*``.
"""
