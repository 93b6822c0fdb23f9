"""The last step of every upload on the Data page: register, then say so — or say why not.

The three upload components (:mod:`components.common.dataset_upload` for two-view tables,
:mod:`components.sequences.upload_sequences`, :mod:`components.synthesis.upload_table`) each end
with a *register* button. Its click runs the kind's registration (every kind stores and registers
through :func:`dpcore.privacy.registration.register_upload`, all or nothing) and then, here:

* refused (:class:`~dpcore.errors.DataError` or :class:`~dpcore.errors.ParameterError`): the
  reason is shown under the button as ``Nothing was registered. …``, with every server path
  in it replaced by what a user may see
  (:func:`components.common.data_locations.hide_server_paths`);
  the draft and every box stay as they are, so the owner can fix and retry;
* registered: the draft's session keys are dropped, the new dataset becomes the sidebar's
  choice, a success message is kept for the next run (:func:`components.common.session.set_flash`)
  and the page reruns.

Registering reads private data (to validate it and record its content digest) but shows
nothing derived from it: the messages name files, lines, columns and declared values only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import streamlit as st

from dpcore.errors import DataError, ParameterError
from dpcore.privacy.ledger import Ledger

from .data_locations import hide_server_paths
from .session import set_flash

__all__ = ["SELECT_DATASET_KEY", "register_and_announce"]

#: Session key the sidebar reads once to select a newly registered dataset.
SELECT_DATASET_KEY = "_select_dataset"


def register_and_announce(ledger: Ledger, register: Callable[[], str], *,
                          success: Callable[[str], str], clear: Iterable[str] = ()) -> bool:
    """Run ``register``; on success announce it and rerun, on refusal show why.

    Parameters
    ----------
    ledger : Ledger
        The app's ledger (only used to hide its and the upload folder's paths in messages).
    register : callable
        Stores and registers the dataset, returns its registered name; raises DataError or
        ParameterError (naming file, line or row and the reason) when nothing was registered.
    success : callable
        ``name → text`` of the success message shown after the rerun.
    clear : iterable of str
        Session keys of the upload's draft, dropped once it is registered.

    Returns
    -------
    bool
        False when the registration was refused (the reason is shown). On success the page
        reruns (:func:`streamlit.rerun` does not return).
    """
    try:
        name = register()
    except (DataError, ParameterError) as exc:
        st.error(f"Nothing was registered. {hide_server_paths(str(exc), ledger)}")
        return False
    for key in clear:
        st.session_state.pop(key, None)
    st.session_state[SELECT_DATASET_KEY] = name
    set_flash("success", success(name))
    st.rerun()
    return True         # not reached: rerun raises in a script run
