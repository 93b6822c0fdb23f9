"""What the app needs from a mining family: one :class:`FamilyUI` per family, and the one
implementation of what every family's launch shares (the cost line, the launch blockers).

A family's code lives in ``dpcore`` (:class:`dpcore.family.Family`: its algorithms, budget
plans, miners); its user interface lives in its own folder of ``components/``
(``components/redescriptions/``, ``components/sequences/``, ``components/synthesis/``), whose
``ui.py`` exports one ``FAMILY_UI``. The app asks these objects, never a switch over dataset
kinds:

* the navigation (``app.py``) builds one section per family from :attr:`FamilyUI.section`
  and :attr:`FamilyUI.pages`, each page shown to the roles it names;
* the sidebar's budget meter prices the run configured for the current dataset's kind
  through :meth:`FamilyUI.configured_params` of the family that mines that kind
  (:func:`ui_for_kind`);
* the launch sections print the cost per purpose (:func:`cost_breakdown`, :func:`cost_text`,
  from :meth:`FamilyUI.cost_purposes` and :meth:`FamilyUI.cost_notes`) and say why a run
  cannot be launched (:func:`launch_blockers`);
* the warm-up runs :meth:`FamilyUI.warmup_steps`; the Data page's upload offers each family
  with :meth:`FamilyUI.render_upload`.

Everything here reads public parameters and budget plans only (0 ε); the privacy rules stay
in ``dpcore`` (the ledger charges, the policy refuses). Further families are registered at
run time with :func:`register_family_ui` (the test suite's toy family,
``tests/dpcore/test_toy_family.py``, is the worked example).
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import streamlit as st

from dpcore.errors import DpcoreError, ParameterError
from dpcore.family import algorithm, family
from dpcore.privacy.ledger import BudgetStatus, DatasetRecord, Ledger
from dpcore.privacy.policy import authorize_run
from dpcore.privacy.units import nano_to_epsilon
from dpcore.registry import REDESCRIPTIONS, SEQUENCES, SYNTHESIS, algorithm_spec

from .jobs import budget_blockers
from .number_fields import fmt_eps
from .session import current_requester

__all__ = ["LaunchGate", "render_launch_gate", "NavPage", "FamilyUI", "CONTRACT", "family_uis",
           "family_ui", "ui_for_kind",
           "ui_for_params", "register_family_ui", "visible_pages", "cost_breakdown", "cost_text",
           "launch_blockers"]


@dataclass(frozen=True)
class NavPage:
    """One page of the app's navigation.

    Attributes
    ----------
    page : str or callable
        The page script, relative to ``app.py`` (``pages/<section>/<name>.py``), or a
        function that draws the page.
    title, icon : str
        As the navigation shows them (``icon``: a ``:material/...:`` name, or None).
    url_path : str or None
        The page's address (``/mine``); a script page that is no default page needs one,
        with a deep-link shim ``pages/<url_path>.py`` (components/common/deep_links.py).
    default : bool
        The page opened at ``/``.
    roles : frozenset of str or None
        The roles that see the page (:data:`dpcore.privacy.roles.ROLES`); None: everyone.
    """

    page: str | Callable[[], None]
    title: str
    icon: str | None = None
    url_path: str | None = None
    default: bool = False
    roles: frozenset[str] | None = None


@runtime_checkable
class FamilyUI(Protocol):
    """The user interface of one mining family (one object per family)."""

    #: The key of the :class:`dpcore.family.Family` it shows (a registry family name).
    family: str
    #: Its section of the navigation ("Frequent sequences").
    section: str
    #: The title of the page that mines it (a page of :attr:`pages`).
    mining_page: str
    #: Its pages, in navigation order.
    pages: tuple[NavPage, ...]
    #: What an analyst lowers when a run does not fit the budget ("ε").
    lower_to_fit: str
    #: Why Launch waits while the family's kernels compile (None: it never waits).
    engine_not_ready: str | None
    #: "the {miners_noun} miners" in the warm-up's progress line ("frequent-sequence").
    miners_noun: str
    #: Its kind in the Data page's upload choice ("sequences (frequent paths)").
    upload_label: str

    def configured_params(self, record: DatasetRecord | None,
                          state: MutableMapping) -> Any:
        """The run configured on :attr:`mining_page` (not validated); ParameterError with
        the form's own messages when the form refuses it. Pure: reads ``state`` only."""

    def cost_purposes(self, params) -> Sequence[tuple[str, str]]:
        """``[(budget-slot phase, what it pays for), ...]`` in the order the cost line
        names them (:attr:`dpcore.privacy.units.BudgetSlot.phase`)."""

    def cost_notes(self, params) -> tuple[str, str]:
        """Text after the list of parts (inside the sentence) and after the sentence
        (the mode's notes); either may be empty."""

    def render_result(self, ledger: Ledger, record: DatasetRecord, run_id: str) -> None:
        """Draw what the stored run ``run_id`` released (read back through the ledger with
        the viewer's role; owner diagnostics only where the policy allows)."""

    def warmup_steps(self) -> list:
        """The family's warm-up steps (:class:`components.common.warmup.WarmupStep`): every
        algorithm × mode once on tiny data built in code, with a throwaway accountant."""

    def render_upload(self, ledger: Ledger) -> None:
        """The owner's upload of a dataset of the family's kind (Data page)."""


#: Every attribute and method of :class:`FamilyUI` (what :func:`register_family_ui` checks).
CONTRACT = ("family", "section", "mining_page", "pages", "lower_to_fit", "engine_not_ready",
            "miners_noun", "upload_label", "configured_params", "cost_purposes", "cost_notes",
            "render_result", "warmup_steps", "render_upload")


def _built_in() -> dict[str, FamilyUI]:
    # Imported on first use: the family folders import this module (the contract and the
    # shared launch parts), so they cannot be imported while it loads.
    from components.redescriptions.ui import FAMILY_UI as redescriptions
    from components.sequences.ui import FAMILY_UI as sequences
    from components.synthesis.ui import FAMILY_UI as synthesis

    return {REDESCRIPTIONS: redescriptions, SEQUENCES: sequences, SYNTHESIS: synthesis}


_registered: dict[str, FamilyUI] = {}


def family_uis() -> dict[str, FamilyUI]:
    """Every family's UI by family key: the three built-in ones, then those registered at
    run time (navigation order)."""
    return {**_built_in(), **_registered}


def family_ui(key: str) -> FamilyUI:
    """The UI of family ``key`` (ParameterError naming the known ones otherwise)."""
    known = family_uis()
    try:
        return known[key]
    except (KeyError, TypeError):
        raise ParameterError(f"family must be one of {', '.join(known)}; got {key!r}"
                             ) from None


def ui_for_kind(kind: str | None) -> FamilyUI | None:
    """The UI of the family that mines datasets of ``kind`` (the first registered, as a new
    family may mine a kind another already mines); None for an unknown kind."""
    return next((ui for ui in family_uis().values() if family(ui.family).kind.key == kind),
                None)


def ui_for_params(params) -> FamilyUI:
    """The UI of the family whose algorithm ``params`` configures."""
    return family_ui(algorithm_spec(params.algorithm).family)


def register_family_ui(ui: FamilyUI) -> Callable[[], None]:
    """Add a family's UI (its :class:`dpcore.family.Family` registered already, with
    :func:`dpcore.registry.register_family`); returns a function that removes it again.

    Raises
    ------
    ParameterError
        ``ui`` lacks part of the contract, its family is not registered, or the family
        has a UI already.
    """
    if not isinstance(ui, FamilyUI):
        missing = [name for name in CONTRACT if not hasattr(ui, name)]
        raise ParameterError(f"a family UI needs {', '.join(sorted(missing))}")
    family(ui.family)
    if ui.family in family_uis():
        raise ParameterError(f"family {ui.family!r} has a UI registered already")
    _registered[ui.family] = ui

    def undo() -> None:
        _registered.pop(ui.family, None)

    return undo


def visible_pages(pages: Sequence[NavPage], role: str) -> list[NavPage]:
    """The pages ``role`` sees."""
    return [p for p in pages if p.roles is None or role in p.roles]


# ------------------------------------------------------------- the shared launch parts

def cost_breakdown(params, ui: FamilyUI | None = None) -> list[tuple[str, int]]:
    """The run's charge per purpose, ``[(what it pays for, nano-ε), ...]`` (validates).

    The budget plan's slots (``dpcore.family.algorithm(...).plan``) summed by phase, named
    and ordered by the family's :meth:`FamilyUI.cost_purposes`; a phase the family does not
    name is listed under its own name, so every nano-ε of the plan is accounted for.
    """
    ui = ui or ui_for_params(params)
    totals: dict[str, int] = {}
    for slot in algorithm(params.algorithm).plan(params):
        totals[slot.phase] = totals.get(slot.phase, 0) + slot.epsilon_nano
    purposes = list(ui.cost_purposes(params))
    named = {phase for phase, _ in purposes}
    purposes += [(phase, phase) for phase in totals if phase not in named]
    return [(purpose, totals[phase]) for phase, purpose in purposes if phase in totals]


def cost_text(params, cost_nano: int, ui: FamilyUI | None = None) -> str:
    """The pre-launch cost line: the total, what each part pays for, the family's notes."""
    ui = ui or ui_for_params(params)
    parts = [f"ε = {fmt_eps(nano_to_epsilon(nano))} for {purpose}"
             for purpose, nano in cost_breakdown(params, ui)]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    inside, after = ui.cost_notes(params)
    return (f"This run costs **ε = {fmt_eps(nano_to_epsilon(cost_nano))}**: {listed}{inside}."
            + after)


def launch_blockers(ui: FamilyUI, remaining: BudgetStatus, cost_nano: int,
                    record: DatasetRecord, engine_ready: bool = True) -> list[str]:
    """Why the run cannot be launched now (empty: it can). Pure: the caller reads the
    remaining budget from the ledger, as the budget meter does."""
    reasons = budget_blockers(remaining, cost_nano, record, lower=ui.lower_to_fit)
    if not engine_ready and ui.engine_not_ready:
        reasons.append(ui.engine_not_ready)
    return reasons


@dataclass(frozen=True)
class LaunchGate:
    """What passed the launch gate: the checked parameters, their cost (nano-ε), the demo
    seed (None: fresh randomness) and the dataset's budget as read for the cost line."""

    params: Any
    cost_nano: int
    seed: int | None
    remaining: BudgetStatus


def render_launch_gate(ledger: Ledger, record: DatasetRecord, *, launch_key: str,
                       key_prefix: str, problems: Sequence[str],
                       read: Callable[[], tuple[Any, int, int | None]],
                       what: str = "numbers") -> LaunchGate | None:
    """The gate every family's launch passes before its Launch button: refused form values,
    parameters that cannot run, a run the policy does not allow — each stops here with its
    reason and any pending confirmation dropped (nothing is charged); else the cost line.

    Parameters
    ----------
    launch_key, key_prefix : str
        The family's launch state key and widget prefix (``<prefix>_launch_button``).
    problems : sequence of str
        The form's refused values; any → a disabled Launch button and the list.
    read : callable
        Returns ``(params, cost_nano, seed)`` of the form (validated); a
        :class:`~dpcore.errors.DpcoreError`, ``TypeError`` or ``ValueError`` is shown.
    what : str
        What the form's problems are ("numbers", "values").

    Returns
    -------
    LaunchGate or None
        None when the run cannot go (the reason is on the page).
    """
    if problems:
        st.session_state.pop(launch_key, None)
        st.button("Launch", type="primary", key=f"{key_prefix}_launch_button", disabled=True,
                  help=f"Fix the refused {what} first.")
        st.error(f"Launch is disabled until these {what} are fixed (each is explained next "
                 "to its box):  \n" + "  \n".join(f"• {p}" for p in problems))
        return None
    try:
        params, cost, seed = read()
    except (DpcoreError, TypeError, ValueError) as exc:
        st.session_state.pop(launch_key, None)
        st.error(f"These parameters cannot run: {exc}")
        return None
    try:
        # the policy (dpcore.privacy.policy), not the UI, decides who may run what
        authorize_run(record, params, current_requester(), seed=seed)
    except DpcoreError as exc:
        st.session_state.pop(launch_key, None)
        st.error(f"This run is not allowed: {exc}")
        return None
    remaining = ledger.budget(record.name)
    st.markdown(cost_text(params, cost) +
                f" Remaining on `{record.name}`: ε = {fmt_eps(remaining.remaining)}.")
    return LaunchGate(params, cost, seed, remaining)
