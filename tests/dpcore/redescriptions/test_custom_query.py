"""Paid queries of one's own (dpcore/redescriptions/custom_query.py): parsing against the
public schema, refusals that charge nothing, the run path, exact accounting, the stored
result format, editing mined queries, and the calibration of the 4-cell noise."""

from __future__ import annotations

import math
import os
import zlib

import numpy as np
import pytest
from scipy import stats

from dpcore.errors import BudgetExceededError, ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import Requester
from dpcore.privacy.units import epsilon_to_nano
from dpcore.redescriptions import custom_query as cq
from dpcore.redescriptions.coding import code_view_strict
from dpcore.redescriptions.evaluate import serenade_query_mask
from dpcore.redescriptions.pruning import expected_jaccard_errors, suggest_threshold
from dpcore.redescriptions.results import (
    Condition,
    Literal,
    RunResult,
    TreeNode,
    TreeQuery,
    TreeRecord,
)
from dpcore.registry import CUSTOM_QUERY, REDESCRIPTIONS, algorithm_spec
from dpcore.runs import charge_and_mine, load_result, readable_runs, run_cost

BASE_SEED = int(os.environ.get("DPRM_TEST_SEED", 20231126))
SEED_MSG = f"(DPRM_TEST_SEED={BASE_SEED})"


def rng_for(name: str) -> np.random.Generator:
    return np.random.default_rng([BASE_SEED, zlib.crc32(name.encode())])


@pytest.fixture()
def ledger(tmp_path, clinic_dataset):
    led = Ledger(tmp_path / "ledger.sqlite")
    led.register_dataset("clinic", clinic_dataset.schema, None, 3.0, actor="owner",
                         confirmed=True)
    return led


# --------------------------------------------------------------------------- parsing

@pytest.mark.parametrize("text, side", [
    ("[DX_CHF] ∨ [DX_CKD]", 0),
    ("([DX_CHF] ∧ [SEX = F]) ∨ [DX_CKD]", 0),
    ("(([DX_CHF] ∧ [SEX = F]) ∨ [DX_CKD]) ∧ ¬[DX_CANCER]", 0),
    ("[LAB_BNP > 400]", 1),
    ("[300 < LAB_BNP ≤ 800] ∧ [LAB_TSH ≤ 4.5]", 1),
])
def test_the_export_syntax_round_trips_and_counts_like_the_owner_evaluation(
        clinic_dataset, text, side):
    q = cq.parse_query(clinic_dataset.schema, text, side)
    assert q.text == text
    assert cq.parse_query(clinic_dataset.schema, q.text, side) == q
    coded = code_view_strict(clinic_dataset.schema, clinic_dataset.views[side])
    # the coded mask equals the evaluation on raw values (dpcore.redescriptions.evaluate)
    np.testing.assert_array_equal(cq.query_mask(coded, q),
                                  serenade_query_mask(clinic_dataset, q))


def test_ascii_spellings_are_read_too(clinic_dataset):
    schema = clinic_dataset.schema
    a = cq.parse_query(schema, "(![DX_CHF] & [SEX = F]) | [DX_CKD]", 0)
    b = cq.parse_query(schema, "(¬[DX_CHF] ∧ [SEX = F]) ∨ [DX_CKD]", 0)
    assert a == b
    assert cq.parse_query(schema, "[LAB_BNP <= 400]", 1).text == "[LAB_BNP ≤ 400]"


@pytest.mark.parametrize("text, side, named", [
    ("[DX_NOPE]", 0, "unknown attribute 'DX_NOPE'"),
    ("[LAB_BNP > 400]", 0, "'LAB_BNP' is an attribute of the right view"),
    ("[patient_id]", 0, "'patient_id' is the id column"),
    ("[LAB_BNP > 401]", 1, "threshold 401 of 'LAB_BNP' is not on its public grid"),
    ("[350 < LAB_BNP ≤ 800]", 1, "threshold 350"),
    ("[SEX = X]", 0, "'X' is not a declared category of 'SEX'"),
    ("[SEX]", 0, "'SEX' is categorical"),
    ("[LAB_BNP]", 1, "'LAB_BNP' is numeric"),
    ("[LAB_BNP < 400]", 1, "'<' is not a grid test"),
    ("[SEX ≠ F]", 0, "'≠' is not a literal"),
    ("[DX_CHF] ∧ [DX_CKD] ∨ [DX_COPD]", 0, "mixes ∧ and ∨"),
    ("[DX_CHF] ∧ ([DX_CKD] ∨ [DX_COPD])", 0, "parenthesised group may only open"),
    ("[DX_CHF] ∧", 0, "ends where a literal"),
    ("DX_CHF", 0, "cannot read 'DX_CHF'"),
    ("", 1, "the right query (view 'labs') is empty"),
    ("([DX_CHF]", 0, "not closed"),
])
def test_each_refusal_names_what_is_wrong(clinic_dataset, text, side, named):
    with pytest.raises(cq.QueryError) as err:
        cq.parse_query(clinic_dataset.schema, text, side)
    assert named in str(err.value)


@pytest.mark.parametrize("left, right, named", [
    ("[DX_NOPE]", "[LAB_BNP > 400]", "DX_NOPE"),
    ("[DX_CHF]", "[LAB_BNP > 401]", "401"),
    ("[DX_CHF]", "[patient_id]", "id column"),
    ("[DX_CHF]", "", "empty"),
])
def test_a_refused_query_charges_nothing_and_stores_nothing(ledger, clinic_dataset, left,
                                                           right, named):
    params = cq.CustomQueryParams(epsilon=0.2, left_query=left, right_query=right)
    with pytest.raises(ParameterError, match=named):
        charge_and_mine(ledger, "clinic", params, data=clinic_dataset)
    assert ledger.budget("clinic").spent_nano == 0
    assert ledger.list_runs("clinic") == []


def test_parameters_are_checked_before_the_schema(ledger, clinic_dataset):
    for bad in (dict(epsilon=0.0), dict(epsilon=-1.0), dict(epsilon=math.nan),
                dict(mode="faithful_mode"), dict(left_query=3)):
        with pytest.raises(ParameterError):
            charge_and_mine(ledger, "clinic", cq.CustomQueryParams(
                **{"left_query": "[DX_CHF]", "right_query": "[LAB_BNP > 400]", **bad}),
                data=clinic_dataset)
    assert ledger.budget("clinic").spent_nano == 0


# --------------------------------------------------------------------------- run path

def test_a_paid_query_is_charged_exactly_stored_and_listed_with_mined_runs(ledger,
                                                                           clinic_dataset):
    params = cq.CustomQueryParams(epsilon=0.3, left_query="[DX_CHF] ∨ [DX_CKD]",
                                  right_query="[LAB_BNP > 400]")
    assert run_cost(params) == epsilon_to_nano(0.3)
    result = charge_and_mine(ledger, "clinic", params, run_id="q1", seed=7,
                             data=clinic_dataset)
    assert ledger.budget("clinic").spent_nano == epsilon_to_nano(0.3)
    assert result.epsilon_nano == epsilon_to_nano(0.3)
    [call] = result.mechanism_calls
    assert call["epsilon_nano"] == epsilon_to_nano(0.3) and call["sensitivity"] == 1
    assert call["label"] == cq.QUERY_TABLE_LABEL
    stored = load_result(ledger, "q1", requester=Requester())
    assert isinstance(stored, RunResult) and stored.to_dict() == result.to_dict()
    assert [r.run_id for r in readable_runs(ledger, "clinic", "analyst")] == ["q1"]
    assert algorithm_spec(stored.algorithm).family == REDESCRIPTIONS
    [red] = stored.redescriptions
    assert red.left.text == "[DX_CHF] ∨ [DX_CKD]" and red.right.text == "[LAB_BNP > 400]"
    table = cq.query_table(stored)
    assert (table.support_both, table.jaccard, table.pvalue) == (red.support_both,
                                                                 red.jaccard, red.pvalue)
    # the truth (public demo data: checkable): |E11| = 807 of J 0.738 (sample README)
    left = serenade_query_mask(clinic_dataset, red.left)
    right = serenade_query_mask(clinic_dataset, red.right)
    truth = cq.query_cells(left, right)
    assert truth.sum() == clinic_dataset.n_rows
    # noise of scale 1/0.3 per cell: far below 60 rows with overwhelming probability
    assert np.all(np.abs(np.array(table.cells) - truth) < 60)
    # the Explore page's pruning reads its noise from the release, like Serenade's
    errors = expected_jaccard_errors(stored)
    assert 0 < errors[0] < 0.05
    assert suggest_threshold([stored]) == 0.0


def test_a_replayed_query_charges_once(ledger, clinic_dataset):
    params = cq.CustomQueryParams(epsilon=0.25, left_query="[DX_DIABETES]",
                                  right_query="[LAB_HBA1C > 6.5]")
    first = charge_and_mine(ledger, "clinic", params, run_id="same", data=clinic_dataset)
    again = charge_and_mine(ledger, "clinic", params, run_id="same", data=clinic_dataset)
    assert first.to_dict() == again.to_dict()
    assert ledger.budget("clinic").spent_nano == epsilon_to_nano(0.25)


def test_a_query_beyond_the_remaining_budget_is_refused_before_noise(ledger, clinic_dataset):
    params = cq.CustomQueryParams(epsilon=5.0, left_query="[DX_DIABETES]",
                                  right_query="[LAB_HBA1C > 6.5]")
    with pytest.raises(BudgetExceededError):
        charge_and_mine(ledger, "clinic", params, data=clinic_dataset)
    assert ledger.budget("clinic").spent_nano == 0


def test_the_registry_names_the_query_and_no_miner_list_includes_it():
    from dpcore import registry

    assert CUSTOM_QUERY not in registry.ALGORITHMS
    assert CUSTOM_QUERY in registry.ALL_ALGORITHMS
    assert registry.algorithm_spec(CUSTOM_QUERY).modes == (registry.STRICT,)


# --------------------------------------------------------------------------- editing

def test_dropping_a_literal_keeps_the_rest_left_to_right(clinic_dataset):
    q = cq.parse_query(clinic_dataset.schema, "([DX_CHF] ∧ [SEX = F]) ∨ [DX_CKD]", 0)
    assert cq.drop_literal(q, 0) == "[SEX = F] ∨ [DX_CKD]"
    assert cq.drop_literal(q, 1) == "[DX_CHF] ∨ [DX_CKD]"
    assert cq.drop_literal(q, 2) == "[DX_CHF] ∧ [SEX = F]"
    single = cq.parse_query(clinic_dataset.schema, "[DX_CHF]", 0)
    with pytest.raises(cq.QueryError, match="at least one literal"):
        cq.drop_literal(single, 0)


def _tree(view: int, leaves: list[tuple[Condition, ...]]) -> TreeRecord:
    nodes = (TreeNode(0, -1, 0, None, None, None, (), None, 0),)
    return TreeRecord(0, view, 0, 0, nodes, tuple(leaves))


def test_a_tree_query_becomes_editable_text_when_it_has_a_left_to_right_form(clinic_dataset):
    tree = _tree(1, [(Condition("LAB_BNP", ">", 400.0), Condition("LAB_BNP", "<=", 800.0)),
                     (Condition("LAB_TSH", ">", 4.5),),
                     (Condition("LAB_TSH", "<=", 4.5), Condition("LAB_ALT", ">", 100.0)),
                     (Condition("LAB_TSH", ">", 4.5), Condition("LAB_ALT", ">", 100.0))])
    result = RunResult("r", "clinic", "altexpm", "strict", {}, "0", "now", 1, [], [tree], [],
                       [])
    q = TreeQuery(1, 0, (Literal(0), Literal(1)), (0, 1), "")
    text = cq.editable_text(result, q)
    assert text == "[400 < LAB_BNP ≤ 800] ∨ [LAB_TSH > 4.5]"
    cq.parse_query(clinic_dataset.schema, text, 1)  # on the grid: payable as is
    one_conjunction_first = TreeQuery(1, 0, (Literal(0), Literal(2)), (0, 2), "")
    assert cq.editable_text(result, one_conjunction_first) == \
        "([LAB_TSH ≤ 4.5] ∧ [LAB_ALT > 100]) ∨ [400 < LAB_BNP ≤ 800]"
    two_conjunctions = TreeQuery(1, 0, (Literal(2), Literal(3)), (2, 3), "")
    assert cq.editable_text(result, two_conjunctions) is None


# --------------------------------------------------------------------------- calibration

def _dlap_binned(noise: np.ndarray, epsilon: float):
    """Observed counts and exact probabilities of discrete Laplace(1/ε) on pooled bins."""
    a = math.exp(-epsilon)
    n = noise.size
    k_cut = 1
    while n * 2 * a**k_cut / (1 + a) >= 5:
        k_cut += 1
    ks = np.arange(-k_cut + 1, k_cut)
    probs = np.concatenate([[a**k_cut / (1 + a)], (1 - a) / (1 + a) * a ** np.abs(ks),
                            [a**k_cut / (1 + a)]])
    observed = np.bincount(np.clip(noise, -k_cut, k_cut).astype(np.int64) + k_cut,
                           minlength=2 * k_cut + 1)
    return observed, probs


def test_the_4_cell_noise_is_discrete_laplace_with_the_charged_epsilon():
    """χ² of each cell's noise against discrete Laplace(1/ε), α = 1e-6, with a power check:
    the same samples reject the distribution at 0.7× and 1.3× the ε."""
    eps, reps = 0.5, 4000
    truth = np.array([120, 30, 45, 805])
    rng = rng_for("custom query table")
    noise = np.empty((reps, 4), dtype=np.int64)
    for r in range(reps):
        acc = PrivacyAccountant(epsilon_to_nano(eps))
        noise[r] = cq.release_table(truth, epsilon_to_nano(eps), rng=rng, accountant=acc) - truth
        assert acc.spent_nano == epsilon_to_nano(eps)
    pooled = noise.ravel()
    observed, probs = _dlap_binned(pooled, eps)
    p = stats.chisquare(observed, probs * pooled.size).pvalue
    assert p > 1e-6, f"4-cell noise is not discrete Laplace(1/ε): p = {p:.2e} {SEED_MSG}"
    for cell in range(4):  # each cell on its own (independence of the four draws)
        obs, pr = _dlap_binned(noise[:, cell], eps)
        assert stats.chisquare(obs, pr * reps).pvalue > 1e-6, SEED_MSG
    assert abs(np.corrcoef(noise[:, 0], noise[:, 1])[0, 1]) < 0.1, SEED_MSG
    for wrong in (0.7 * eps, 1.3 * eps):
        obs, pr = _dlap_binned(pooled, wrong)
        assert stats.chisquare(obs, pr * pooled.size).pvalue < 1e-6, \
            f"power: ε×{wrong / eps:.1f} not rejected {SEED_MSG}"
