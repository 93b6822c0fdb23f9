"""Deep links on a freshly started server.

Streamlit routes a server's very first script run by the legacy ``pages/*.py`` files as
long as no session has called ``st.navigation`` yet (the app declares its pages with
``st.navigation`` in ``app.py``, from the page scripts in ``pages/<section>/``). A first
request to ``/mine`` would then run a bare page script, or — with no such file — show
Streamlit's "Page not found" dialog. So ``pages/`` holds one two-line file per URL path
(``pages/mine.py`` …) that calls :func:`run_app`: the app runs as on any other request, and
its ``st.navigation`` resolves the same URL path to the real page. Once any session has
called ``st.navigation``, Streamlit never reads these files again.
"""

from __future__ import annotations

import runpy
from pathlib import Path

__all__ = ["APP", "run_app"]

#: The app's entry point.
APP = Path(__file__).resolve().parents[2] / "app.py"


def run_app() -> None:
    """Run ``app.py`` in this script run (its ``st.navigation`` picks the requested page)."""
    runpy.run_path(str(APP), run_name="__main__")
