"""The built-in families' UIs (components/*/ui.py) fulfil the FamilyUI contract, and the one
cost line, launch blockers, meter reading and result view driven by it (the toy family's UI,
registered at run time, is in tests/dpcore/test_toy_family.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from components.common.family_ui import (
    FamilyUI,
    cost_breakdown,
    cost_text,
    family_ui,
    family_uis,
    ui_for_kind,
    ui_for_params,
)
from dpcore.family import algorithm, families
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import Requester
from dpcore.privacy.registration import register_folder
from dpcore.redescriptions.params import TreeParams
from dpcore.registry import (
    ALGORITHM_SPECS,
    FAMILIES,
    KIND_SEQUENCES,
    KIND_TABLE,
    KIND_TWO_VIEW,
    MCMCTREEPAIR,
    REDESCRIPTIONS,
    SEQUENCES,
    SYNTHESIS,
    family_algorithms,
)
from dpcore.runs import charge_and_mine, run_cost

REPO = Path(__file__).resolve().parents[3]


def test_each_built_in_family_has_one_ui_fulfilling_the_contract():
    uis = family_uis()
    assert list(uis) == list(FAMILIES)
    for key, ui in uis.items():
        assert isinstance(ui, FamilyUI) and ui.family == key
        assert key in families()
        assert ui.mining_page in [p.title for p in ui.pages]
        for page in ui.pages:
            assert (REPO / page.page).is_file() and page.url_path, page


def test_each_dataset_kind_is_mined_by_its_familys_ui():
    assert ui_for_kind(KIND_TWO_VIEW).family == REDESCRIPTIONS
    assert ui_for_kind(KIND_SEQUENCES).family == SEQUENCES
    assert ui_for_kind(KIND_TABLE).family == SYNTHESIS
    assert ui_for_kind("no such kind") is None


@pytest.mark.parametrize("family", FAMILIES)
def test_the_cost_parts_of_every_algorithm_and_mode_sum_to_the_charge(family):
    """Every nano-ε of the budget plan is named on the cost line, for each algorithm in each
    of its modes at the form's defaults."""
    ui = family_ui(family)
    for key in family_algorithms(family):
        impl = algorithm(key)
        for mode in ALGORITHM_SPECS[key].modes:
            params = impl.params_type(algorithm=key, mode=mode)
            assert ui_for_params(params) is ui
            parts = cost_breakdown(params)
            assert parts and sum(n for _, n in parts) == run_cost(params), (key, mode)
            assert all(purpose.startswith("the ") for purpose, _ in parts), parts
            assert cost_text(params, run_cost(params)).startswith("This run costs **ε = ")


@pytest.mark.parametrize("family", FAMILIES)
def test_an_untouched_form_configures_a_runnable_default(family):
    """The meter prices a run before its page was ever opened: each family's form reads an
    empty session state as its defaults."""
    params = family_ui(family).configured_params(None, {})
    assert params.algorithm in family_algorithms(family)
    assert run_cost(params.validate()) > 0


def test_the_redescription_result_view_lists_every_released_redescription(tmp_path,
                                                                           clinic_dataset):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    register_folder(ledger, str(REPO / "sample_data" / "clinic"), cap=5.0, actor="owner")
    params = TreeParams(algorithm=MCMCTREEPAIR, epsilon=1.0, in_tr=2, mc_iter=200)
    result = charge_and_mine(ledger, "clinic", params, data=clinic_dataset, run_id="r1",
                             seed=11, requester=Requester())

    def page(location: str) -> None:
        from components.common.family_ui import family_ui
        from dpcore.privacy.ledger import Ledger
        from dpcore.registry import REDESCRIPTIONS

        ledger = Ledger(location)
        family_ui(REDESCRIPTIONS).render_result(ledger, ledger._dataset_record("clinic"), "r1")

    at = AppTest.from_function(page, args=(str(ledger.location),), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert result.redescriptions, "the seeded run releases redescriptions"
    shown = at.dataframe[0].value
    assert len(shown) == len(result.redescriptions)
    assert list(shown["left"]) == [r.left.text for r in result.redescriptions]
