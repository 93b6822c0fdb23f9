"""The synthetic-data family's :class:`~components.common.family_ui.FamilyUI`: the Synthesis
page, its form's configured run, the cost line's parts, a stored run's synthetic table, the
labelled-table upload and the warm-up of MC-GEN and the floor in both modes."""

from __future__ import annotations

from collections.abc import MutableMapping

from dpcore.family import algorithm as algorithm_impl
from dpcore.privacy.ledger import DatasetRecord, Ledger
from dpcore.registry import FAITHFUL, SYNTHESIS, by_mode
from dpcore.synthesis.params import CLASSES, FEATURES, GROUPS, MARGINALS, TREE

from ..common.family_ui import NavPage
from ..common.warmup import WarmupStep, registry_steps
from .synthesis_form import params_from_state
from .synthesis_view import render_synthesis_result
from .upload_table import render_table_upload

__all__ = ["SynthesisUI", "FAMILY_UI"]

#: What each phase of the budget plan pays for, in spending order (strict; faithful MC-GEN
#: spends its one phase on the MDAV clusters' noisy means and covariances).
_PHASE_PURPOSES = ((CLASSES, "the noisy class counts"),
                   (FEATURES, "the noisy correlations that build the feature groups"),
                   (GROUPS, "the cells' noisy counts, sums and second moments"),
                   (MARGINALS, "the noisy per-class histograms"))
_FAITHFUL_GROUPS = "the clusters' noisy means and covariances"
#: Strict MC-GEN's default tree structure (no owner groups): what its two later phases buy.
_TREE_PURPOSES = {FEATURES: "the choice of the tree's feature pairs",
                  GROUPS: "the noisy per-class histograms and pair tables"}


class SynthesisUI:
    """Synthetic data in the app (:data:`dpcore.registry.SYNTHESIS`)."""

    family = SYNTHESIS
    section = "Synthetic data"
    mining_page = "Synthesis"
    pages = (NavPage("pages/synthesis/synthesis.py", "Synthesis", ":material/table_view:",
                     url_path="synthesis"),)
    lower_to_fit = "ε"
    engine_not_ready = None          # the Synthesis page does not wait for the warm-up
    miners_noun = "synthetic-data"
    upload_label = "labelled table (synthetic data)"

    def configured_params(self, record: DatasetRecord | None, state: MutableMapping):
        return params_from_state(record, state)

    def cost_purposes(self, params):
        tree = params.structure == TREE and not params.groups_given and params.mode != FAITHFUL
        return tuple((phase, _TREE_PURPOSES[phase] if tree and phase in _TREE_PURPOSES else
                      by_mode(params.mode, strict=purpose, faithful=_FAITHFUL_GROUPS)
                      if phase == GROUPS else purpose) for phase, purpose in _PHASE_PURPOSES)

    def cost_notes(self, params) -> tuple[str, str]:
        if params.mode == FAITHFUL:
            return "", (" Faithful MC-GEN charges this ε but is not ε-DP: the charge does not "
                        "bound what it reveals.")
        return "", ""

    def render_result(self, ledger: Ledger, record: DatasetRecord, run_id: str) -> None:
        render_synthesis_result(ledger, record, run_id)

    def warmup_steps(self) -> list[WarmupStep]:
        """Every algorithm × mode on a generated Pima-shaped table of 300 rows."""
        from dpcore.data.table.table import table_from_frame
        from dpcore.synthesis.samples import generate_pima_like, pima_like_schema

        data = table_from_frame(generate_pima_like(300, seed=7), pima_like_schema())
        return registry_steps(SYNTHESIS, data, lambda spec, key, mode: algorithm_impl(
            key).params_type(algorithm=key, mode=mode, epsilon=10.0))

    def render_upload(self, ledger: Ledger) -> None:
        render_table_upload(ledger)


FAMILY_UI = SynthesisUI()
