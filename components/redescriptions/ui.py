"""The redescription family's :class:`~components.common.family_ui.FamilyUI`: the Mine and
Explore pages, the Mine form's configured run, the cost line's parts, a run's released
redescriptions, the two-view upload and the warm-up of every miner × mode."""

from __future__ import annotations

from collections.abc import MutableMapping

import numpy as np
import streamlit as st

from dpcore.errors import DpcoreError
from dpcore.family import algorithm as algorithm_impl
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.ledger import DatasetRecord, Ledger
from dpcore.registry import (
    ALGORITHM_LABELS,
    ALGORITHMS,
    FAITHFUL,
    MODES,
    REDESCRIPTIONS,
    SERENADE_CS,
)
from dpcore.runs import RunInProgressError, load_result

from ..common.data_locations import hide_server_paths
from ..common.dataset_upload import render_two_view_upload
from ..common.family_ui import NavPage
from ..common.session import current_requester
from ..common.warmup import WarmupStep, compile_group
from .explore_view import kept_display_frame
from .params_form import params_from_state
from .scatter import redescription_rows

__all__ = ["RedescriptionsUI", "FAMILY_UI"]

#: What each budget-plan phase pays for, in the order the cost line names them.
_PHASE_PURPOSES = (("tree", "the trees"), ("init", "the initial pairs"),
                   ("extend", "the extensions"), ("extract", "the noisy counts"),
                   ("rows", "the noisy row count"), ("quality", "the noisy counts"))


class RedescriptionsUI:
    """Redescriptions in the app (:data:`dpcore.registry.REDESCRIPTIONS`)."""

    family = REDESCRIPTIONS
    section = "Redescriptions"
    mining_page = "Mine"
    pages = (NavPage("pages/redescriptions/mine.py", "Mine", ":material/rocket_launch:",
                     url_path="mine"),
             NavPage("pages/redescriptions/explore.py", "Explore", ":material/scatter_plot:",
                     url_path="explore"))
    lower_to_fit = "ε (or the number of trials)"
    engine_not_ready = "The mining engine is still being prepared (see the progress bar)."
    miners_noun = "redescription"
    upload_label = "two-view table (redescriptions)"

    def configured_params(self, record: DatasetRecord | None, state: MutableMapping):
        """The Mine form's run (paper defaults for what the form never set)."""
        return params_from_state(state)

    def cost_purposes(self, params):
        """Tree miners: the trees and the noisy counts. Serenade: the initial pairs, the
        extensions, the noisy row count (strict mode only) and the noisy counts."""
        return _PHASE_PURPOSES

    def cost_notes(self, params) -> tuple[str, str]:
        """The number of mechanism calls; what each mode charges beyond the ε chosen."""
        n_calls = len(algorithm_impl(params.algorithm).plan(params))
        after = ""
        if getattr(params, "is_serenade", False):   # the paid queries have one slot
            if params.algorithm == SERENADE_CS:
                after += (" SerenadeCS charges every round up front; a redescription that "
                          "stops early leaves its share unspent, and a strict run returns it "
                          "to the dataset's budget when its result is stored.")
            if params.mode == FAITHFUL:
                after += " Faithful Serenade costs exactly ε, but it is not strictly ε-DP."
        elif params.mode == FAITHFUL:
            after += (" Faithful mode charges 1.5× for each extraction (three histograms at "
                      "scale 2/ε), so the total exceeds the ε you chose.")
        return f", over {n_calls} mechanism calls", after

    def render_result(self, ledger: Ledger, record: DatasetRecord, run_id: str) -> None:
        """The run's released redescriptions, unpruned (Explore prunes and exports them)."""
        try:
            result = load_result(ledger, run_id, requester=current_requester())
        except RunInProgressError:
            st.info("This run is still being computed; its result appears when it is stored.")
            return
        except DpcoreError as exc:
            st.error(hide_server_paths(str(exc), ledger))
            return
        rows = redescription_rows([result])
        if rows.empty:
            st.info("This run released no redescription.")
            return
        st.dataframe(kept_display_frame(rows)[0], hide_index=True)

    def warmup_steps(self) -> list[WarmupStep]:
        """Every miner × mode on the tiny two-view dataset (not the paid custom queries)."""
        from dpcore.redescriptions.mining import mine
        from dpcore.redescriptions.params import plan_budget
        from dpcore.redescriptions.warmup import (
            INTERVALS_KEY,
            tiny_dataset,
            warm_intervals,
            warmup_params,
        )

        data = tiny_dataset()
        steps = []
        for mode in MODES:
            for algorithm in ALGORITHMS:
                params = warmup_params(algorithm, mode)

                def action(params=params) -> None:
                    budget = sum(s.epsilon_nano for s in plan_budget(params))
                    mine(data, params, rng=np.random.default_rng(0),
                         accountant=PrivacyAccountant(budget))

                steps.append(WarmupStep(f"{algorithm}/{mode}",
                                        f"{ALGORITHM_LABELS[algorithm]} ({mode})",
                                        REDESCRIPTIONS, action,
                                        compile_group(REDESCRIPTIONS, params, mode)))
        # every charged run stores its intervals: their kernel is compiled before Launch too
        steps.append(WarmupStep(INTERVALS_KEY, "intervals (bootstrap)", REDESCRIPTIONS,
                                warm_intervals, f"{REDESCRIPTIONS}:intervals"))
        return steps

    def render_upload(self, ledger: Ledger) -> None:
        """The two-view upload: files → prefilled schema → review → register."""
        render_two_view_upload(ledger)


FAMILY_UI = RedescriptionsUI()
