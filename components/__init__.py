"""Streamlit building blocks of the workbench; the pages in ``pages/`` stay thin.

Nothing here computes a DP release: mining goes through :func:`dpcore.runs.charge_and_mine`
(charged in the ledger before any noise), and every release shown is read back from the
ledger. DP releases are never put in ``st.cache_*``.
"""
