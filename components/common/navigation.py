"""The app's navigation: the workbench's own pages, then one section per mining family.

The family sections come from the registered families' UIs
(:func:`components.common.family_ui.family_uis`: the three built-in ones, then any registered
at run time), each page shown to the roles it names. The page scripts live one folder down
(``pages/<section>/``), never in ``pages/`` itself: Streamlit serves a server's very first
request through its legacy routing of ``pages/*.py`` until some session has called
``st.navigation``, so ``pages/`` holds a deep-link shim per URL path instead
(:mod:`components.common.deep_links`). ``url_path`` keeps every link as it was.
"""

from __future__ import annotations

import streamlit as st

from .family_ui import NavPage, family_uis, visible_pages

__all__ = ["WORKBENCH", "WORKBENCH_PAGES", "navigation_sections", "render_navigation"]

#: The section of the pages every family shares.
WORKBENCH = "Workbench"
WORKBENCH_PAGES = (
    NavPage("pages/workbench/data.py", "Data", ":material/dataset:", default=True),
    NavPage("pages/workbench/runs.py", "Runs", ":material/history:", url_path="runs"),
    NavPage("pages/workbench/teaching.py", "Owner & teaching", ":material/school:",
            url_path="teaching"),
)


def navigation_sections(role: str) -> dict[str, list[NavPage]]:
    """Section title → the pages ``role`` sees in it, workbench first, then each family in
    registration order (a section with no page for ``role`` is left out)."""
    sections = {WORKBENCH: visible_pages(WORKBENCH_PAGES, role)}
    for ui in family_uis().values():
        pages = visible_pages(ui.pages, role)
        if pages:
            sections.setdefault(ui.section, []).extend(pages)
    return {title: pages for title, pages in sections.items() if pages}


def _st_page(page: NavPage) -> st.Page:
    return st.Page(page.page, title=page.title, icon=page.icon, url_path=page.url_path,
                   default=page.default)


def render_navigation(role: str):
    """Declare the pages ``role`` sees (``st.navigation``); returns the page to run."""
    return st.navigation({title: [_st_page(p) for p in pages]
                          for title, pages in navigation_sections(role).items()})
