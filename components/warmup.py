"""Warm the numba kernels once per server process, with a visible status.

The first call of each kernel compiles it (seconds with an empty numba cache).
:func:`ensure_warm` runs every miner once, in both privacy modes, on a tiny
synthetic dataset built here in code, with a throwaway
:class:`~dpcore.privacy.accountant.PrivacyAccountant`. It never touches the ledger, so it
spends no budget of any dataset; its output is discarded (it is not a release of
any real data). The same dtypes as real data (float64 views) are used, so the
compiled specialisations are the ones real runs need.
"""

from __future__ import annotations

import logging

import streamlit as st

from dpcore.redescriptions.warmup import warm_kernels

__all__ = ["ensure_warm"]

_log = logging.getLogger(__name__)
_WARM_IN_THIS_PROCESS = False


@st.cache_resource(show_spinner=False)
def _warm_once() -> dict:
    """Per-process cache of the warm-up (Streamlit runs it once; concurrent callers wait)."""
    try:
        return {"ok": True, "timings": warm_kernels()}
    except Exception as exc:  # noqa: BLE001 - a failed warm-up must not stop the app
        _log.exception("numba warm-up failed")
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def ensure_warm() -> dict:
    """Warm the kernels once per server process, showing a "preparing" status the first time.

    Returns
    -------
    dict
        ``{"ok": True, "timings": {...}}`` or ``{"ok": False, "error": "..."}``.
    """
    global _WARM_IN_THIS_PROCESS
    if _WARM_IN_THIS_PROCESS:
        return _warm_once()
    with st.status("Preparing the mining engine (compiling kernels; first start of the "
                   "server only)…", expanded=False) as status:
        report = _warm_once()
        if report["ok"]:
            status.update(label="Mining engine ready", state="complete")
        else:
            status.update(label="Mining engine warm-up failed; runs compile on first use",
                          state="error")
    _WARM_IN_THIS_PROCESS = True
    return report
