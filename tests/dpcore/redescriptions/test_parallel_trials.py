"""The tree miners' trials on two threads: child streams, thread count, charge order.

* ``randomness.child_generators``: ChaCha20 children of a ChaCha20 run generator (keyed
  from its output, reproducible for a given key), PCG64 children of a seeded run;
* ``mining.trial_threads``: argument and ``DPRM_TRIAL_THREADS``, bad values refused
  before anything is charged;
* the same seed gives the same result with 1 and 2 threads (every tree miner, both modes);
* a run is exactly its trials run one by one through the public tree functions with the
  trial's own stream (so the only change from a sequential run is how streams are split);
* every tree charge precedes every kernel call; progress comes from the calling thread;
  the kernels really run in the pool.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from randomgen import ChaCha

from dpcore.errors import BudgetExceededError, ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.randomness import child_generators, is_secure_generator, secure_generator
from dpcore.redescriptions import mining
from dpcore.redescriptions.mining import mine, trial_threads
from dpcore.redescriptions.params import TreeParams, family_type, plan_budget
from dpcore.redescriptions.targets import make_target, pick_attribute
from dpcore.redescriptions.trees import sample_tree_pair
from tests.dpcore.redescriptions.test_mining import SEED, toy_dataset

# ---------------------------------------------------------------- child streams

def test_chacha_children_are_chacha20_keyed_from_the_parent():
    parent = secure_generator()
    children = child_generators(parent, 3)
    assert len(children) == 3 and all(is_secure_generator(c) for c in children)
    draws = [c.integers(0, 2**62, size=4).tolist() for c in children]
    assert len({tuple(d) for d in draws}) == 3, "children are distinct streams"


def test_chacha_children_are_reproducible_for_a_given_key_and_differ_across_keys():
    def first_draws(key):
        parent = np.random.Generator(ChaCha(key=key, counter=0, rounds=20))
        return [c.random(3).tolist() for c in child_generators(parent, 2)]

    assert first_draws(12345) == first_draws(12345)
    assert first_draws(12345) != first_draws(12346)


def test_pcg64_children_are_reproducible_and_independent_of_the_parents_draws():
    a = child_generators(np.random.default_rng(5), 4)
    b = child_generators(np.random.default_rng(5), 4)
    assert [type(c.bit_generator).__name__ for c in a] == ["PCG64"] * 4
    assert [c.random() for c in a] == [c.random() for c in b]
    c = child_generators(np.random.default_rng(6), 4)
    assert [x.random() for x in c] != [x.random() for x in child_generators(
        np.random.default_rng(5), 4)]


def test_children_of_a_generator_without_seed_sequence_are_seeded_from_its_output():
    def legacy():  # MT19937 seeded the legacy way: no SeedSequence to spawn from
        bit_generator = np.random.RandomState(5)._bit_generator
        assert bit_generator.seed_seq is None
        return np.random.Generator(bit_generator)

    a, b = child_generators(legacy(), 2), child_generators(legacy(), 2)
    assert [x.random() for x in a] == [x.random() for x in b]
    assert a[0].random() != a[1].random()


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True])
def test_child_generators_refuse_a_bad_count(bad):
    with pytest.raises(ParameterError, match="non-negative int"):
        child_generators(np.random.default_rng(0), bad)


# ---------------------------------------------------------------- pool size

def test_trial_threads_default_env_and_argument(monkeypatch):
    monkeypatch.delenv(mining.TRIAL_THREADS_ENV, raising=False)
    assert 1 <= trial_threads() <= mining.DEFAULT_TRIAL_THREADS
    monkeypatch.setenv(mining.TRIAL_THREADS_ENV, "1")
    assert trial_threads() == 1
    assert trial_threads(2) == 2, "an explicit count wins over the environment"


@pytest.mark.parametrize("raw", ["zero", "0", "-2", "2.5", "99"])
def test_a_bad_environment_value_is_refused_before_any_charge(monkeypatch, raw):
    monkeypatch.setenv(mining.TRIAL_THREADS_ENV, raw)
    accountant = PrivacyAccountant(10**12)
    with pytest.raises(ParameterError, match=mining.TRIAL_THREADS_ENV):
        mine(toy_dataset(), TreeParams(in_tr=2, mc_iter=20), accountant=accountant,
             rng=np.random.default_rng(SEED), seed=SEED)
    assert accountant.calls == []


@pytest.mark.parametrize("bad", [0, 9, 1.0, True])
def test_a_bad_thread_argument_is_refused(bad):
    with pytest.raises(ParameterError, match="threads"):
        trial_threads(bad)


# ---------------------------------------------------------------- same result, any pool

def _fingerprint(result):
    return (result.trees, result.extractions, result.redescriptions, result.mechanism_calls,
            result.epsilon_nano, result.diagnostics.score_traces,
            result.diagnostics.mcmc_rows_touched)


CASES = [("mcmctreepair", "strict"), ("altmcmc", "strict"), ("altexpm", "strict"),
         ("mcmctreepair", "faithful"), ("altmcmc", "faithful"), ("altexpm", "faithful")]


@pytest.mark.parametrize("algorithm,mode", CASES)
def test_the_same_seed_gives_the_same_result_with_one_and_two_threads(algorithm, mode):
    ds = toy_dataset()
    params = family_type(algorithm)(algorithm=algorithm, mode=mode, epsilon=2.0, in_tr=5, rm_iter=2,
                          mc_iter=300)
    one = mine(ds, params, rng=np.random.default_rng(SEED), seed=SEED, threads=1)
    two = mine(ds, params, rng=np.random.default_rng(SEED), seed=SEED, threads=2)
    assert len(one.trees) > 0
    assert _fingerprint(one) == _fingerprint(two)
    other = mine(ds, params, rng=np.random.default_rng(SEED + 1), seed=SEED + 1, threads=2)
    assert _fingerprint(other) != _fingerprint(two), "the seed matters (the test can fail)"


def test_a_private_run_with_two_threads_spends_the_plan_and_differs_each_time():
    ds = toy_dataset()
    params = TreeParams(algorithm="altexpm", epsilon=1.0, in_tr=3, mc_iter=50)
    a = mine(ds, params, threads=2)
    b = mine(ds, params, threads=2)
    total = sum(s.epsilon_nano for s in plan_budget(params))
    assert a.epsilon_nano == b.epsilon_nano == total
    assert a.extractions != b.extractions


# ---------------------------------------------------------------- what changed, and only that

def test_a_run_is_its_trials_run_one_by_one_with_their_own_streams():
    """Rebuild a seeded MCMCTreePair run by hand with the unchanged public functions:
    targets from the run generator, then for trial t the pair chain of
    ``trees.sample_tree_pair`` and the extraction noise from child stream t. The released
    trees and noisy tables must be exactly the miner's: the parallel miner changes only
    which stream each trial draws from."""
    ds = toy_dataset()
    params = TreeParams(algorithm="mcmctreepair", epsilon=2.0, in_tr=4, mc_iter=400)
    result = mine(ds, params, rng=np.random.default_rng(SEED), seed=SEED, threads=2)

    rng = np.random.default_rng(SEED)
    used, targets = set(), []
    for trial in range(params.in_tr):
        view, attr = pick_attribute(ds, rng, exclude=used)
        used.add((view, attr))
        targets.append((trial, view, make_target(ds, view, attr, params.mode)))
    streams = child_generators(rng, params.in_tr)
    slots = {(s.trial, s.step, s.role): s.epsilon_nano for s in plan_budget(params)}
    codes = mining.strict_coding(ds)
    expected_trees, expected_tables = [], []
    for trial, view, target in targets:
        if target is None:
            continue
        first, second = 1 - view, view
        t1, t2, _ = sample_tree_pair(
            (first, second), codes[first], codes[second], target.classes, target.n_classes,
            params.depth, slots[(trial, 0, "tree")], streams[trial],
            PrivacyAccountant(10**12), "by hand", mc_iter=params.mc_iter, faithful=False,
            sigma=params.sigma, window=params.sigma_window, count_scale=True)
        n = len(expected_trees)
        expected_trees += [t1.to_record(n, trial, 0), t2.to_record(n + 1, trial, 0)]
        left, right = sorted([t1, t2], key=lambda t: t.view)
        table = mining.true_leaf_table(left, right)
        noisy = mining.noisy_counts(table, kind=params.noise, sensitivity=1,
                                    epsilon_nano=slots[(trial, 0, "extract")],
                                    rng=streams[trial], accountant=PrivacyAccountant(10**12),
                                    label="by hand")
        expected_tables.append(np.asarray(noisy, dtype=np.float64).tolist())
    assert expected_trees and result.trees == expected_trees
    assert [np.asarray(x.noisy_table).tolist() for x in result.extractions] == expected_tables


# ---------------------------------------------------------------- order of charges and draws

@pytest.mark.parametrize("algorithm", ["mcmctreepair", "altmcmc", "altexpm"])
def test_every_tree_is_charged_before_any_kernel_runs(monkeypatch, algorithm):
    events = []
    accountant = PrivacyAccountant(10**12)
    original_spend = accountant.spend

    def spend(mechanism, label, *args, **kwargs):
        events.append(("charge", label))
        return original_spend(mechanism, label, *args, **kwargs)

    monkeypatch.setattr(accountant, "spend", spend)
    for name in ("draw_tree_pair", "draw_mcmc_tree", "draw_expmech_tree"):
        original = getattr(mining, name)

        def spy(*args, _original=original, _name=name, **kwargs):
            events.append(("draw", _name))
            return _original(*args, **kwargs)

        monkeypatch.setattr(mining, name, spy)
    params = family_type(algorithm)(algorithm=algorithm, epsilon=1.0, in_tr=3, rm_iter=2,
                                    mc_iter=50)
    mine(toy_dataset(), params, rng=np.random.default_rng(SEED), seed=SEED,
         accountant=accountant, threads=2)
    kinds = [kind for kind, _ in events]
    first_draw = kinds.index("draw")
    tree_charges = [i for i, (kind, label) in enumerate(events)
                    if kind == "charge" and "extraction" not in label]
    extraction_charges = [i for i, (kind, label) in enumerate(events)
                          if kind == "charge" and "extraction" in label]
    assert tree_charges and max(tree_charges) < first_draw
    assert extraction_charges and min(extraction_charges) > max(
        i for i, kind in enumerate(kinds) if kind == "draw")


def test_a_budget_too_small_for_the_trees_stops_the_run_before_any_kernel(monkeypatch):
    params = TreeParams(algorithm="mcmctreepair", epsilon=1.0, in_tr=3, mc_iter=50)
    drawn = []
    monkeypatch.setattr(mining, "draw_tree_pair", lambda *a, **k: drawn.append(1))
    tree_total = sum(s.epsilon_nano for s in plan_budget(params) if s.role == "tree")
    with pytest.raises(BudgetExceededError):
        mine(toy_dataset(), params, rng=np.random.default_rng(SEED), seed=SEED,
             accountant=PrivacyAccountant(tree_total - 1), threads=2)
    assert drawn == []


def test_kernels_run_in_the_pool_and_progress_in_the_calling_thread(monkeypatch):
    workers, progress_threads = set(), set()
    original = mining.draw_tree_pair

    def spy(*args, **kwargs):
        workers.add(threading.current_thread().name)
        return original(*args, **kwargs)

    monkeypatch.setattr(mining, "draw_tree_pair", spy)
    params = TreeParams(algorithm="mcmctreepair", epsilon=1.0, in_tr=4, mc_iter=200)
    mine(toy_dataset(), params, rng=np.random.default_rng(SEED), seed=SEED, threads=2,
         progress=lambda f, m: progress_threads.add(threading.current_thread().name))
    assert workers and all(name.startswith("dprm-trial") for name in workers)
    assert progress_threads == {threading.current_thread().name}


def test_an_error_in_a_trial_reaches_the_caller(monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("kernel failed")

    monkeypatch.setattr(mining, "draw_mcmc_tree", boom)
    with pytest.raises(RuntimeError, match="kernel failed"):
        mine(toy_dataset(), TreeParams(algorithm="altmcmc", in_tr=3, mc_iter=20),
             rng=np.random.default_rng(SEED), seed=SEED, threads=2)


def test_every_kernel_the_pool_runs_releases_the_gil():
    """The pool gains nothing (and Streamlit's threads stall) if a chain kernel holds the GIL:
    every numba dispatcher the draw_* functions reach is compiled with ``nogil=True``."""
    from dpcore.redescriptions import bitset_mcmc as B
    from dpcore.redescriptions import kernels as K

    kernels = [B.mcmc_tree_pair_bits, B.mcmc_single_tree_bits, B.mcmc_tree_pair_faithful_bits,
               B.mcmc_single_tree_faithful_bits, K.expmech_tree, K.leaf_rows_for_codes,
               K.contingency]
    assert all(k.targetoptions.get("nogil") is True for k in kernels), \
        [k.__name__ for k in kernels if k.targetoptions.get("nogil") is not True]


def test_a_run_started_from_a_worker_thread_uses_the_pool_and_gives_the_same_result():
    """The app mines in a worker thread of its own (components.common.jobs); the trial pool then
    starts from that thread. Same seed, same result as from the main thread."""
    ds = toy_dataset()
    params = TreeParams(algorithm="altmcmc", epsilon=1.0, in_tr=4, mc_iter=200)
    here = mine(ds, params, rng=np.random.default_rng(SEED), seed=SEED, threads=1)
    out = {}

    def job():
        out["result"] = mine(ds, params, rng=np.random.default_rng(SEED), seed=SEED,
                             threads=2)

    worker = threading.Thread(target=job)
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive()
    assert _fingerprint(out["result"]) == _fingerprint(here)
