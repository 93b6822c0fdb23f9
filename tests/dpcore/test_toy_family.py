"""How to add a family (docs/ARCHITECTURE.md): a fourth family written here, in the test suite
only, registered at run time, and run through every generic path — the command line's
``mine``, a batch plan on a Dask cluster, the harnesses' sandbox executor, the app's
navigation and a launch from its own page — charged and stored, without editing any shared
module.

The toy family releases a DP histogram of the class column of a labelled table (the
existing ``table`` kind, so no ledger migration): one count per class, discrete Laplace of
scale 1/ε (Δ = 1: adding or removing one row changes one count by one), one mechanism call,
one budget slot.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np
import pytest

from dpcore import family as families
from dpcore.cli import main
from dpcore.distributed.batch import run_batch
from dpcore.distributed.plan import check_plan, parse_plan
from dpcore.errors import DataError, ParameterError
from dpcore.executor import run_sandbox
from dpcore.family import AlgorithmBase, Checked, Release
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.mechanisms import noisy_counts
from dpcore.privacy.policy import EVERYONE, Requester
from dpcore.privacy.registration import register_folder
from dpcore.privacy.units import BudgetSlot, epsilon_to_nano
from dpcore.registry import (
    ALGORITHM_SPECS,
    KIND_TABLE,
    STRICT,
    AlgorithmSpec,
    Preset,
    family_algorithms,
    register_family,
)
from dpcore.runs import charge_and_mine, load_result, run_cost
from tests.support.accounts_support import signed_in

PIMA = str(Path(__file__).resolve().parents[2] / "sample_data" / "pima_like")
APP = str(Path(__file__).resolve().parents[2] / "app.py")
TOY, HISTOGRAM = "toy_histograms", "class_histogram"
LABEL = "class histogram"


# ----------------------------------------------------------------------------- the family

@dataclass(frozen=True)
class HistogramParams:
    algorithm: str = HISTOGRAM
    mode: str = STRICT
    epsilon: float = 0.5

    def validate(self) -> HistogramParams:
        if self.algorithm != HISTOGRAM or self.mode != STRICT:
            raise ParameterError(f"the class histogram runs {HISTOGRAM} in strict mode only")
        epsilon_to_nano(self.epsilon)
        return self

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class HistogramDiagnostics:
    true_counts: list = field(default_factory=list)   # owner-only: the true counts


@dataclass
class HistogramResult(Release):
    run_id: str
    dataset: str
    classes: list
    noisy_counts: list
    epsilon_nano: int
    mechanism_calls: list
    seed: int | None = None
    audience: str = EVERYONE
    diagnostics: HistogramDiagnostics = field(default_factory=HistogramDiagnostics)

    def to_json(self) -> str:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "diagnostics"}
        return json.dumps(data)

    @classmethod
    def from_dict(cls, data: dict) -> HistogramResult:
        return cls(**data)


class ClassHistogram(AlgorithmBase):
    key = HISTOGRAM
    params_type = HistogramParams
    result_type = HistogramResult
    help_texts = {}

    def plan(self, params):
        return [BudgetSlot("histogram", 0, epsilon_to_nano(params.validate().epsilon))]

    def prepare(self, data, params):
        if not data.schema.classes:
            raise DataError("the table declares no classes")
        return Checked(data, params.validate())

    def mine(self, prepared, *, rng, accountant, run_id=None, seed=None, progress=None):
        data, params = prepared.data, prepared.params
        counts = np.bincount(data.labels, minlength=len(data.schema.classes))
        noisy = noisy_counts(counts, sensitivity=1, epsilon_nano=self.plan(params)[0].epsilon_nano,
                             rng=rng, accountant=accountant, label=LABEL)
        return HistogramResult(run_id=run_id or "sandbox", dataset=data.schema.name,
                               classes=[str(c) for c in data.schema.classes],
                               noisy_counts=[float(x) for x in noisy],
                               epsilon_nano=accountant.spent_nano,
                               mechanism_calls=accountant.to_records(), seed=seed,
                               diagnostics=HistogramDiagnostics([int(c) for c in counts]))


class ToyFamily:
    key = TOY
    kind = families.dataset_kind(KIND_TABLE)    # an existing kind: no ledger migration
    specs = (AlgorithmSpec(key=HISTOGRAM, family=TOY, label="class histogram",
                           blurb="a noisy count of each class of a labelled table",
                           parameters={STRICT: ("epsilon", "mode")},
                           presets=(Preset("interactive", "class histogram (ε = 0.5)", {}),),
                           dataset_kind=KIND_TABLE),)
    algorithms = {HISTOGRAM: ClassHistogram()}


@pytest.fixture()
def toy():
    undo = register_family(ToyFamily())
    yield
    undo()


@pytest.fixture()
def ledger(tmp_path):
    led = Ledger(tmp_path / "ledger.sqlite")
    register_folder(led, PIMA, cap=5.0, actor="owner")
    return led


# ----------------------------------------------------------------------------- the tests

def test_a_registered_family_is_typed_listed_and_removed_again(toy):
    assert isinstance(families.family(TOY), families.Family)
    assert isinstance(families.algorithm(HISTOGRAM), families.Algorithm)
    assert family_algorithms(TOY) == (HISTOGRAM,)
    assert HISTOGRAM in ALGORITHM_SPECS
    assert run_cost(HistogramParams(epsilon=0.25)) == epsilon_to_nano(0.25)
    with pytest.raises(ParameterError, match="registered already"):
        register_family(ToyFamily())


def test_undo_leaves_no_trace():
    undo = register_family(ToyFamily())
    undo()
    assert HISTOGRAM not in ALGORITHM_SPECS and TOY not in families.families()
    with pytest.raises(ParameterError, match="algorithm must be one of"):
        run_cost(HistogramParams())


def test_the_run_path_charges_stores_and_reads_back_a_toy_run(toy, ledger):
    params = HistogramParams(epsilon=0.5)
    result = charge_and_mine(ledger, "pima_like", params, run_id="toy-1", seed=3)
    assert ledger.budget("pima_like").spent_nano == epsilon_to_nano(0.5)
    [call] = result.mechanism_calls
    assert call["label"] == LABEL and call["epsilon_nano"] == epsilon_to_nano(0.5)
    stored = json.loads(ledger.get_result("toy-1")[0])
    assert stored["family"] == TOY and "diagnostics" not in stored
    back = load_result(ledger, "toy-1", requester=Requester())
    assert isinstance(back, HistogramResult) and back.noisy_counts == result.noisy_counts
    truth = load_result(ledger, "toy-1", requester=signed_in(ledger), include_diagnostics=True)
    assert sum(truth.diagnostics.true_counts) > 0
    # noise of scale 1/0.5 per count: far below 40 rows with overwhelming probability
    assert np.all(np.abs(np.array(back.noisy_counts) - truth.diagnostics.true_counts) < 40)
    # same seed on public demo data, another run id: the same release
    again = charge_and_mine(ledger, "pima_like", params, run_id="toy-2", seed=3)
    assert again.noisy_counts == result.noisy_counts


def test_bad_toy_input_charges_nothing(toy, ledger):
    with pytest.raises(ParameterError, match="strict mode only"):
        charge_and_mine(ledger, "pima_like", HistogramParams(mode="other"))
    with pytest.raises(ParameterError):
        charge_and_mine(ledger, "pima_like", HistogramParams(epsilon=-1.0))
    assert ledger.budget("pima_like").spent_nano == 0


def test_the_command_line_mines_the_toy_family(toy, ledger, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DPRM_LEDGER", str(tmp_path / "ledger.sqlite"))
    out = tmp_path / "toy.json"
    assert main(["mine", "--dataset", "pima_like", "--algorithm", HISTOGRAM,
                 "--epsilon", "0.25", "--seed", "1", "--out", str(out)]) == 0
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["epsilon_nano"] == epsilon_to_nano(0.25) and len(written["noisy_counts"]) == 2
    assert ledger.budget("pima_like").spent_nano == epsilon_to_nano(0.25)
    assert f"a {TOY} result" in capsys.readouterr().err


def test_the_harness_sandbox_runs_the_toy_family_without_a_ledger(toy):
    from dpcore.experiments.synthesis import generated_table

    table = generated_table("pima_like", rows=200)
    result = run_sandbox(HistogramParams(epsilon=1.0), table, rng=np.random.default_rng(0))
    assert result.epsilon_nano == epsilon_to_nano(1.0)
    assert sum(result.diagnostics.true_counts) == 200


def test_a_batch_plan_charges_dispatches_and_stores_toy_runs(toy, ledger):
    distributed = pytest.importorskip("distributed")
    plan = parse_plan({"defaults": {"dataset": "pima_like", "algorithm": HISTOGRAM},
                       "runs": [{"run_id": "b1", "epsilon": 0.5},
                                {"run_id": "b2", "epsilon": 0.25, "seed": 9}]})
    with pytest.raises(ParameterError, match="not a parameter"):
        parse_plan({"runs": [{"dataset": "pima_like", "algorithm": HISTOGRAM, "k": 3}]})
    planned = check_plan(ledger, plan, Requester())
    assert ledger.budget("pima_like").spent_nano == 0, "checking a plan charges nothing"
    # In-process workers: they see the family registered in this process.
    # (The scheduler's HTTP server starts even without a dashboard, on port 8787 unless told
    # otherwise, and a busy 8787 is a warning: port 0 on loopback lets the system choose.)
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=1,
                                  dashboard_address="127.0.0.1:0") as cluster, \
            distributed.Client(cluster) as client:
        outcomes = run_batch(ledger, planned, client)
    assert [o.status for o in outcomes] == ["done", "done"]
    assert ledger.budget("pima_like").spent_nano == epsilon_to_nano(0.75)
    assert isinstance(load_result(ledger, "b2", requester=Requester()), HistogramResult)
    assert outcomes[1].result.seed == 9


# ----------------------------------------------------------------------------- its user interface
#
# A family's UI is one object fulfilling components.common.family_ui.FamilyUI, registered with
# register_family_ui (which returns an undo). The app's navigation shows its pages in a section
# of their own, by role; its page launches a charged run through the shared cost line and
# launch blockers. Everything below lives in this test module only.

TOY_SECTION, TOY_PAGE, TRUTH_PAGE = "Toy histograms", "Class histogram", "Class truth"
EPSILON_KEY, RUN_KEY = "toy_epsilon", "toy_run"


def render_toy_page() -> None:
    """The toy family's page: ε, the cost line, Launch (charged through the run path), the
    release read back from the ledger."""
    import streamlit as st

    from components.common.family_pages import other_kind_text
    from components.common.family_ui import cost_text, family_ui, launch_blockers
    from components.common.session import current_dataset, current_requester, get_ledger

    st.title(TOY_PAGE)
    ledger = get_ledger()
    record = current_dataset(ledger)
    if record is None or record.kind != families.family(TOY).kind.key:
        st.info("Pick a labelled table." if record is None else other_kind_text(record))
        return
    ui = family_ui(TOY)
    st.number_input("ε", value=0.5, key=EPSILON_KEY)
    params = ui.configured_params(record, st.session_state)
    cost = run_cost(params)
    st.markdown(cost_text(params, cost))
    blockers = launch_blockers(ui, ledger.budget(record.name), cost, record)
    for reason in blockers:
        st.warning(reason)
    if st.button("Launch", key="toy_launch", disabled=bool(blockers)):
        result = charge_and_mine(ledger, record.name, params, requester=current_requester())
        st.session_state[RUN_KEY] = result.run_id
    if RUN_KEY in st.session_state:
        ui.render_result(ledger, record, st.session_state[RUN_KEY])


def render_toy_truth() -> None:
    """An owner-only page: the true counts of the last toy run (diagnostics, NOT private)."""
    import streamlit as st

    from components.common.session import current_requester, get_ledger

    if RUN_KEY in st.session_state:
        truth = load_result(get_ledger(), st.session_state[RUN_KEY],
                            requester=current_requester(),
                            include_diagnostics=True)
        st.write(truth.diagnostics.true_counts)


class ToyUI:
    family = TOY
    section = TOY_SECTION
    mining_page = TOY_PAGE
    lower_to_fit = "ε"
    engine_not_ready = None
    miners_noun = "class-histogram"
    upload_label = "labelled table (class histograms)"

    def __init__(self, page_script: Path):
        from components.common.family_ui import NavPage
        from dpcore.privacy.roles import OWNER

        self.pages = (NavPage(str(page_script), TOY_PAGE, ":material/bar_chart:",
                              url_path="class_histogram"),
                      NavPage(render_toy_truth, TRUTH_PAGE, url_path="class_truth",
                              roles=frozenset({OWNER})))

    def configured_params(self, record, state):
        return HistogramParams(epsilon=float(state.get(EPSILON_KEY, 0.5)))

    def cost_purposes(self, params):
        return (("histogram", "the noisy class counts"),)

    def cost_notes(self, params):
        return "", " One count per class, discrete Laplace of scale 1/ε."

    def render_result(self, ledger, record, run_id):
        import streamlit as st

        from components.common.session import current_requester

        result = load_result(ledger, run_id, requester=current_requester())
        st.dataframe({"class": result.classes, "noisy count": result.noisy_counts},
                     hide_index=True)

    def warmup_steps(self):
        from components.common.warmup import registry_steps
        from dpcore.experiments.synthesis import generated_table

        data = generated_table("pima_like", rows=50)
        return registry_steps(TOY, data, lambda spec, key, mode: HistogramParams(mode=mode))

    def render_upload(self, ledger):
        from components.synthesis.upload_table import render_table_upload

        render_table_upload(ledger)       # the same kind as synthesis: the same upload


@pytest.fixture()
def toy_ui(toy, tmp_path):
    from components.common.family_ui import register_family_ui

    script = tmp_path / "toy_page.py"
    script.write_text("from tests.dpcore.test_toy_family import render_toy_page\n\n"
                      "render_toy_page()\n",
                      encoding="utf-8")
    ui = ToyUI(script)
    undo = register_family_ui(ui)
    yield ui
    undo()


def test_a_family_ui_is_checked_registered_and_removed_again(toy, tmp_path):
    from components.common.family_ui import (
        FamilyUI,
        family_ui,
        family_uis,
        register_family_ui,
        ui_for_kind,
    )
    from components.common.warmup import family_steps

    class Incomplete:
        family = TOY

    with pytest.raises(ParameterError, match="needs .*configured_params"):
        register_family_ui(Incomplete())
    ui = ToyUI(tmp_path / "page.py")
    undo = register_family_ui(ui)
    try:
        assert isinstance(ui, FamilyUI) and family_ui(TOY) is ui
        assert list(family_uis())[-1] == TOY
        # the table kind stays the synthesis page's: the first family that mines it
        assert ui_for_kind(KIND_TABLE).family != TOY
        with pytest.raises(ParameterError, match="registered already"):
            register_family_ui(ui)
        [step] = family_steps(TOY)                     # one algorithm × its one mode
        step.action()
    finally:
        undo()
    assert TOY not in family_uis()
    with pytest.raises(ParameterError, match="family must be one of"):
        family_ui(TOY)


def test_a_family_ui_needs_its_family_registered(tmp_path):
    from components.common.family_ui import register_family_ui

    with pytest.raises(ParameterError, match="family must be one of"):
        register_family_ui(ToyUI(tmp_path / "page.py"))


def test_the_navigation_shows_the_toy_section_by_role(toy_ui):
    from components.common.navigation import WORKBENCH, navigation_sections
    from dpcore.privacy.roles import ANALYST, OWNER

    analyst, owner = navigation_sections(ANALYST), navigation_sections(OWNER)
    assert list(analyst)[0] == WORKBENCH and list(analyst)[-1] == TOY_SECTION
    assert [p.title for p in analyst[TOY_SECTION]] == [TOY_PAGE]
    assert [p.title for p in owner[TOY_SECTION]] == [TOY_PAGE, TRUTH_PAGE]


def test_the_cost_line_and_blockers_come_from_the_toy_ui(toy_ui):
    from components.common.family_ui import cost_breakdown, cost_text, launch_blockers
    from dpcore.privacy.ledger import BudgetStatus

    params = HistogramParams(epsilon=0.25)
    assert cost_breakdown(params) == [("the noisy class counts", epsilon_to_nano(0.25))]
    assert cost_text(params, run_cost(params)) == (
        "This run costs **ε = 0.25**: ε = 0.25 for the noisy class counts. One count per "
        "class, discrete Laplace of scale 1/ε.")

    class Record:
        name, confirmed = "pima_like", True

    short = BudgetStatus(cap_nano=10**9, spent_nano=9 * 10**8, remaining_nano=10**8)
    [reason] = launch_blockers(toy_ui, short, run_cost(params), Record())
    assert "only ε = 0.1 remains on `pima_like`" in reason and "Lower ε," in reason


@pytest.mark.usefixtures("apptest_workarounds")
def test_the_toy_family_is_in_the_apps_navigation_and_launches_a_charged_run(
        toy_ui, ledger_path):
    """The done-when of issue 34 for the app: registered in this test only, the toy family's
    page is part of the app's navigation, and its Launch charges the ledger and shows the
    stored release."""
    from streamlit.testing.v1 import AppTest

    from tests.support.accounts_support import select_dataset

    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    select_dataset(at, "pima_like", sidebar=True)
    at.switch_page(str(toy_ui.pages[0].page)).run()   # ValueError if not in the navigation
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == TOY_PAGE
    assert any("ε = 0.5 for the noisy class counts" in m.value for m in at.main.markdown)
    ledger = Ledger(ledger_path)
    before = ledger.budget("pima_like").spent_nano
    at.number_input(key=EPSILON_KEY).set_value(0.25).run()
    at.button(key="toy_launch").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert ledger.budget("pima_like").spent_nano - before == epsilon_to_nano(0.25)
    [run_id] = [r.run_id for r in ledger.list_runs("pima_like") if r.algorithm == HISTOGRAM]
    shown = at.dataframe[-1].value
    assert list(shown["noisy count"]) == load_result(ledger, run_id,
                                                     requester=Requester()).noisy_counts
