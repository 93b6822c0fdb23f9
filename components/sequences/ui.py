"""The frequent-sequence family's :class:`~components.common.family_ui.FamilyUI`: the
Sequences page, its form's configured run, the cost line's parts, a stored run's release,
the sequence upload and the warm-up of PFS2 and its baseline in both modes."""

from __future__ import annotations

from collections.abc import MutableMapping

from dpcore.errors import ParameterError
from dpcore.family import algorithm as algorithm_impl
from dpcore.privacy.ledger import DatasetRecord, Ledger
from dpcore.registry import SEQUENCES
from dpcore.sequences.params import LENGTHS, MAX_LENGTH, PRUNE, RECORDS, VERIFY

from ..common.family_ui import NavPage
from ..common.warmup import WarmupStep, registry_steps
from .sequence_form import read_form
from .sequences_view import render_sequence_result
from .upload_sequences import render_sequence_upload

__all__ = ["SequencesUI", "FAMILY_UI"]

#: What each phase of the budget plan pays for, in the order the cost line names them.
_PHASE_PURPOSES = ((RECORDS, "the noisy number of records"),
                   (LENGTHS, "the noisy length histogram"),
                   (MAX_LENGTH, "the longest frequent length"),
                   (PRUNE, "the pruning on samples"),
                   (VERIFY, "the noisy supports"))


class SequencesUI:
    """Frequent sequences in the app (:data:`dpcore.registry.SEQUENCES`)."""

    family = SEQUENCES
    section = "Frequent sequences"
    mining_page = "Sequences"
    pages = (NavPage("pages/sequences/sequences.py", "Sequences", ":material/timeline:",
                     url_path="sequences"),)
    lower_to_fit = "ε"
    engine_not_ready = "The sequence miner is still being prepared (see the progress bar)."
    miners_noun = "frequent-sequence"
    upload_label = "sequences (frequent paths)"

    def configured_params(self, record: DatasetRecord | None, state: MutableMapping):
        """The Sequences form's run; its refusals joined into one ParameterError."""
        reading = read_form(state)
        if reading.params is None:
            raise ParameterError("; ".join(reading.messages))
        return reading.params

    def cost_purposes(self, params):
        return _PHASE_PURPOSES

    def cost_notes(self, params) -> tuple[str, str]:
        return "", (" The levels share the verification budget; what a strict run that stops "
                    "early leaves unspent is returned to the dataset's budget when its result "
                    "is stored.")

    def render_result(self, ledger: Ledger, record: DatasetRecord, run_id: str) -> None:
        render_sequence_result(ledger, record, run_id)

    def warmup_steps(self) -> list[WarmupStep]:
        """Every algorithm × mode on a generated clickstream of 300 records."""
        from dpcore.sequences.samples import generate_clickstream

        data = generate_clickstream(300, seed=7, max_length=40, name="warm-up")
        return registry_steps(SEQUENCES, data, lambda spec, key, mode: algorithm_impl(
            key).params_type(algorithm=key, mode=mode, epsilon=10.0, theta=0.05))

    def render_upload(self, ledger: Ledger) -> None:
        render_sequence_upload(ledger)


FAMILY_UI = SequencesUI()
