"""How to add a family (docs/ARCHITECTURE.md): a fourth family written here, in the test suite
only, registered at run time, and run through every generic path — the command line's
``mine``, a batch plan on a Dask cluster, the harnesses' sandbox executor — charged and stored,
without editing any shared module.

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
from accounts_support import signed_in

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

PIMA = str(Path(__file__).resolve().parent.parent / "sample_data" / "pima_like")
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
    # (A LocalCluster, not Client(**kwargs): only the cluster honours dashboard_address=None,
    # so a busy port 8787 cannot turn into a warning.)
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        outcomes = run_batch(ledger, planned, client)
    assert [o.status for o in outcomes] == ["done", "done"]
    assert ledger.budget("pima_like").spent_nano == epsilon_to_nano(0.75)
    assert isinstance(load_result(ledger, "b2", requester=Requester()), HistogramResult)
    assert outcomes[1].result.seed == 9
