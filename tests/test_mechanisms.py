"""Fast unit tests of dpcore.privacy.mechanisms: charging order, exact ε, shapes, edge cases.

Seeds: fixed default, override with the environment variable DPRM_TEST_SEED; every
assertion that depends on randomness prints the seed.
"""

from __future__ import annotations

import copy
import math
import os
import zlib

import numpy as np
import pytest

from dpcore.errors import BudgetExceededError, ParameterError
from dpcore.privacy import mechanisms as m
from dpcore.privacy.accountant import PrivacyAccountant

DEFAULT_SEED = 20230807
BASE_SEED = int(os.environ.get("DPRM_TEST_SEED", DEFAULT_SEED))
SEED_MSG = f"(DPRM_TEST_SEED={BASE_SEED}; rerun with the same value to reproduce)"
EPS1 = 10**9  # 1 ε in nano-ε


def make_rng(name: str) -> np.random.Generator:
    """A generator per test, derived from the base seed and a stable name."""
    return np.random.default_rng([BASE_SEED, zlib.crc32(name.encode())])


class SpyAccountant(PrivacyAccountant):
    """A real accountant that also snapshots the rng state when spend is called."""

    def __init__(self, cap_nano, rng):
        super().__init__(cap_nano)
        self.rng = rng
        self.states_at_spend = []

    def spend(self, *args, **kwargs):
        self.states_at_spend.append(copy.deepcopy(self.rng.bit_generator.state))
        return super().spend(*args, **kwargs)


def _call(kind, rng, accountant, epsilon_nano=EPS1, label="test release", **extra):
    """Invoke one of the charging mechanisms with representative inputs."""
    if kind == "laplace":
        return m.laplace([1.0, 2.0, 3.0], sensitivity=extra.get("sensitivity", 1.0),
                         epsilon_nano=epsilon_nano, rng=rng, accountant=accountant, label=label)
    if kind == "discrete_laplace":
        return m.discrete_laplace([1, 2, 3], sensitivity=extra.get("sensitivity", 1),
                                  epsilon_nano=epsilon_nano, rng=rng, accountant=accountant,
                                  label=label)
    if kind == "noisy_discrete":
        return m.noisy_counts([1, 2, 3], kind="discrete", sensitivity=extra.get("sensitivity", 1),
                              epsilon_nano=epsilon_nano, rng=rng, accountant=accountant,
                              label=label)
    if kind == "noisy_continuous":
        return m.noisy_counts([1, 2, 3], kind="continuous",
                              sensitivity=extra.get("sensitivity", 1), epsilon_nano=epsilon_nano,
                              rng=rng, accountant=accountant, label=label)
    if kind == "exponential":
        return m.exponential_mechanism([0.0, 1.0, 2.0], sensitivity=extra.get("sensitivity", 2.0),
                                       epsilon_nano=epsilon_nano, rng=rng, accountant=accountant,
                                       label=label, parallel=extra.get("parallel", 1))
    raise AssertionError(kind)


KINDS = ["laplace", "discrete_laplace", "noisy_discrete", "noisy_continuous", "exponential"]
MECHANISM_NAME = {"laplace": "laplace", "discrete_laplace": "discrete_laplace",
                  "noisy_discrete": "discrete_laplace", "noisy_continuous": "laplace",
                  "exponential": "exponential"}


# --------------------------------------------------------------------------- charging order

@pytest.mark.parametrize("kind", KINDS)
def test_spend_happens_before_any_draw(kind):
    rng = make_rng("order" + kind)
    before = copy.deepcopy(rng.bit_generator.state)
    spy = SpyAccountant(10 * EPS1, rng)
    _call(kind, rng, spy)
    assert spy.states_at_spend == [before], "rng was used before the accountant was charged"
    assert rng.bit_generator.state != before, "the mechanism drew no noise at all"


@pytest.mark.parametrize("kind", KINDS)
def test_refused_spend_draws_nothing_and_records_nothing(kind):
    rng = make_rng("refused" + kind)
    acc = PrivacyAccountant(cap_nano=EPS1)
    acc.spend("laplace", "earlier release", EPS1 - 5, 1.0)
    before = copy.deepcopy(rng.bit_generator.state)
    with pytest.raises(BudgetExceededError):
        _call(kind, rng, acc, epsilon_nano=6)
    assert rng.bit_generator.state == before
    assert len(acc.calls) == 1 and acc.spent_nano == EPS1 - 5


@pytest.mark.parametrize("kind", KINDS)
def test_exact_epsilon_and_metadata_recorded(kind):
    rng = make_rng("exact" + kind)
    acc = PrivacyAccountant(cap_nano=3 * EPS1)
    eps_nano = 333_333_333
    sens = 2 if kind != "laplace" and kind != "noisy_continuous" else 2.5
    _call(kind, rng, acc, epsilon_nano=eps_nano, label="cells of trial 3", sensitivity=sens)
    (call,) = acc.calls
    assert call.mechanism == MECHANISM_NAME[kind]
    assert call.label == "cells of trial 3"
    assert call.epsilon_nano == eps_nano and isinstance(call.epsilon_nano, int)
    assert call.sensitivity == sens
    assert call.parallel == 1
    assert acc.spent_nano == eps_nano


def test_parallel_is_forwarded():
    acc = PrivacyAccountant(cap_nano=EPS1)
    _call("exponential", make_rng("par"), acc, parallel=16)
    assert acc.calls[0].parallel == 16
    acc2 = PrivacyAccountant(cap_nano=EPS1)
    m.discrete_laplace(np.zeros((4, 3), dtype=np.int64), sensitivity=1, epsilon_nano=EPS1,
                       rng=make_rng("par2"), accountant=acc2, label="t", parallel=12)
    assert acc2.calls[0].parallel == 12


# --------------------------------------------------------------------------- bad parameters

BAD_EPS = [0, -1, -EPS1, 1.0, 1e9, True, "1000", None]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bad", BAD_EPS, ids=repr)
def test_nonpositive_or_non_int_epsilon_rejected(kind, bad):
    rng = make_rng("badeps")
    acc = PrivacyAccountant(cap_nano=EPS1)
    before = copy.deepcopy(rng.bit_generator.state)
    with pytest.raises(ParameterError):
        _call(kind, rng, acc, epsilon_nano=bad)
    assert acc.calls == [] and rng.bit_generator.state == before


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bad", [0, -1, 0.0, math.nan, math.inf, -math.inf, True])
def test_bad_sensitivity_rejected(kind, bad):
    acc = PrivacyAccountant(cap_nano=EPS1)
    with pytest.raises(ParameterError):
        _call(kind, make_rng("badsens"), acc, sensitivity=bad)
    assert acc.calls == []


@pytest.mark.parametrize("bad", [0.5, 1.5, 2.0000001])
def test_discrete_laplace_needs_integer_sensitivity(bad):
    acc = PrivacyAccountant(cap_nano=EPS1)
    with pytest.raises(ParameterError, match="integer sensitivity"):
        m.discrete_laplace([1, 2], sensitivity=bad, epsilon_nano=EPS1, rng=make_rng("s"),
                           accountant=acc, label="t")
    assert acc.calls == []
    # an integral float is fine
    m.discrete_laplace([1, 2], sensitivity=2.0, epsilon_nano=EPS1, rng=make_rng("s"),
                       accountant=acc, label="t")


@pytest.mark.parametrize("kind", KINDS)
def test_generator_required(kind):
    acc = PrivacyAccountant(cap_nano=EPS1)
    for bad in (None, np.random.RandomState(0), 42):
        with pytest.raises(ParameterError, match="Generator"):
            _call(kind, bad, acc)
    assert acc.calls == []


@pytest.mark.parametrize("kind", KINDS)
def test_accountant_required(kind):
    with pytest.raises(ParameterError, match="accountant"):
        _call(kind, make_rng("acc"), None)


@pytest.mark.parametrize("kind", KINDS)
def test_label_required(kind):
    acc = PrivacyAccountant(cap_nano=EPS1)
    with pytest.raises(ParameterError, match="label"):
        _call(kind, make_rng("lab"), acc, label="")
    assert acc.calls == []


def test_noisy_counts_unknown_kind_charges_nothing():
    acc = PrivacyAccountant(cap_nano=EPS1)
    with pytest.raises(ParameterError, match="noise kind"):
        m.noisy_counts([1, 2], kind="gaussian", sensitivity=1, epsilon_nano=EPS1,
                       rng=make_rng("k"), accountant=acc, label="t")
    assert acc.calls == []


@pytest.mark.parametrize("values", [[1.0, math.nan], [math.inf], [[1, 2], [3]], ["a"]])
def test_laplace_rejects_bad_values(values):
    acc = PrivacyAccountant(cap_nano=EPS1)
    with pytest.raises(ParameterError):
        m.laplace(values, sensitivity=1, epsilon_nano=EPS1, rng=make_rng("v"), accountant=acc,
                  label="t")
    assert acc.calls == []


@pytest.mark.parametrize("counts", [[1.5, 2.0], [True, False], ["a"], [math.nan],
                                    np.array([2**64 - 1], dtype=np.uint64)])
def test_discrete_laplace_rejects_non_integer_counts(counts):
    acc = PrivacyAccountant(cap_nano=EPS1)
    with pytest.raises(ParameterError):
        m.discrete_laplace(counts, sensitivity=1, epsilon_nano=EPS1, rng=make_rng("c"),
                           accountant=acc, label="t")
    assert acc.calls == []


def test_discrete_laplace_rejects_overflowing_scale():
    acc = PrivacyAccountant(cap_nano=EPS1)
    with pytest.raises(ParameterError, match="too large"):
        m.discrete_laplace([1], sensitivity=10**7, epsilon_nano=1, rng=make_rng("o"),
                           accountant=acc, label="t")
    assert acc.calls == []


# ------------------------------------------------------------------ shapes / dtypes / values

def test_laplace_shape_dtype_and_no_mutation():
    values = np.arange(12, dtype=np.int32).reshape(3, 4)
    orig = values.copy()
    out = m.laplace(values, sensitivity=1, epsilon_nano=EPS1, rng=make_rng("shape"),
                    accountant=PrivacyAccountant(EPS1), label="t")
    assert out.shape == (3, 4) and out.dtype == np.float64
    np.testing.assert_array_equal(values, orig)
    scalar = m.laplace(5, sensitivity=1, epsilon_nano=EPS1, rng=make_rng("shape"),
                       accountant=PrivacyAccountant(EPS1), label="t")
    assert isinstance(scalar, np.ndarray) and scalar.shape == () and scalar.dtype == np.float64


def test_laplace_equals_values_plus_numpy_laplace_at_charged_scale():
    eps_nano, sens = 250_000_000, 2.0
    values = np.array([10.0, 0.0, -3.5])
    out = m.laplace(values, sensitivity=sens, epsilon_nano=eps_nano, rng=make_rng("ref"),
                    accountant=PrivacyAccountant(EPS1), label="t")
    expected = values + make_rng("ref").laplace(0.0, sens / 0.25, size=3)
    np.testing.assert_array_equal(out, expected, err_msg=SEED_MSG)


def test_discrete_laplace_shape_dtype_and_reference_sampler():
    counts = np.array([[0, 5, 9], [100, 7, 1]], dtype=np.int32)
    orig = counts.copy()
    out = m.discrete_laplace(counts, sensitivity=2, epsilon_nano=EPS1 // 2, rng=make_rng("dref"),
                             accountant=PrivacyAccountant(EPS1), label="t")
    assert out.shape == (2, 3) and out.dtype == np.int64
    np.testing.assert_array_equal(counts, orig)
    p = 1.0 - math.exp(-0.5 / 2)
    g = make_rng("dref").geometric(p, size=(2, 2, 3)) - 1
    np.testing.assert_array_equal(out, counts + g[0] - g[1], err_msg=SEED_MSG)


def test_discrete_laplace_accepts_integral_floats_and_scalars():
    out = m.discrete_laplace(np.array([3.0, 4.0]), sensitivity=1, epsilon_nano=EPS1,
                             rng=make_rng("f"), accountant=PrivacyAccountant(EPS1), label="t")
    assert out.dtype == np.int64
    out0 = m.discrete_laplace(3, sensitivity=1, epsilon_nano=EPS1, rng=make_rng("f"),
                              accountant=PrivacyAccountant(EPS1), label="t")
    assert isinstance(out0, np.ndarray) and out0.shape == () and out0.dtype == np.int64


def test_discrete_laplace_huge_epsilon_adds_no_noise():
    counts = np.arange(50)
    out = m.discrete_laplace(counts, sensitivity=1, epsilon_nano=1000 * EPS1, rng=make_rng("h"),
                             accountant=PrivacyAccountant(1000 * EPS1), label="t")
    np.testing.assert_array_equal(out, counts)


def test_noisy_counts_returns_float64_for_both_kinds():
    for kind in ("discrete", "continuous"):
        out = m.noisy_counts(np.ones((2, 2), dtype=np.int64), kind=kind, sensitivity=1,
                             epsilon_nano=EPS1, rng=make_rng(kind),
                             accountant=PrivacyAccountant(EPS1), label="t")
        assert out.dtype == np.float64 and out.shape == (2, 2)
    # discrete output is integer-valued
    out = m.noisy_counts(np.arange(100), kind="discrete", sensitivity=1, epsilon_nano=EPS1,
                         rng=make_rng("int"), accountant=PrivacyAccountant(EPS1), label="t")
    np.testing.assert_array_equal(out, np.round(out))


# --------------------------------------------------------------------------- exponential mechanism

def _em(u, rng, eps_nano=EPS1, sens=1.0):
    return m.exponential_mechanism(u, sensitivity=sens, epsilon_nano=eps_nano, rng=rng,
                                   accountant=PrivacyAccountant(eps_nano), label="t")


def test_exponential_mechanism_returns_python_int():
    idx = _em([0.0, 1.0], make_rng("int"))
    assert type(idx) is int and idx in (0, 1)


@pytest.mark.parametrize("bad", [[], np.zeros(0), [[1.0, 2.0]], [1.0, math.nan], [0.0, math.inf],
                                 [-math.inf, -math.inf], ["x"]])
def test_exponential_mechanism_bad_candidates_charge_nothing(bad):
    rng = make_rng("emptyc")
    acc = PrivacyAccountant(EPS1)
    before = copy.deepcopy(rng.bit_generator.state)
    with pytest.raises(ParameterError):
        m.exponential_mechanism(bad, sensitivity=1, epsilon_nano=EPS1, rng=rng, accountant=acc,
                                label="t")
    assert acc.calls == [] and rng.bit_generator.state == before


def test_empty_candidate_set_message():
    with pytest.raises(ParameterError, match="at least one candidate"):
        _em([], make_rng("e"))


def test_minus_inf_utilities_never_chosen():
    rng = make_rng("minf")
    u = np.array([-np.inf, 0.0, -np.inf, -1e9, 3.0, -np.inf])
    picks = {_em(u, rng, eps_nano=10**7) for _ in range(400)}
    assert picks <= {1, 3, 4}, SEED_MSG
    only = np.array([-np.inf, -np.inf, 7.0, -np.inf])
    assert all(_em(only, rng, eps_nano=10**6) == 2 for _ in range(50))


def test_single_candidate():
    assert _em([123.0], make_rng("one")) == 0


def test_all_equal_utilities_every_candidate_reachable():
    rng = make_rng("equal")
    picks = np.bincount([_em(np.full(4, 7.5), rng) for _ in range(400)], minlength=4)
    assert picks.min() > 50, f"{picks} {SEED_MSG}"


@pytest.mark.parametrize("u", [[1e308, 1e308, -1e308], [-1e308, 1.7e308, 0.0],
                               [1e300, -1e300, 5e299], [-1e308, -1e308]])
@pytest.mark.parametrize("sens", [1.0, 1e-300])
def test_huge_utilities_no_overflow(u, sens):
    # pytest.ini turns warnings into errors, so an overflow warning would fail here.
    # Gaps of ~1e300 make every non-maximal candidate's probability exactly 0 in
    # float64, and ties among the maxima must all stay reachable.
    rng = make_rng("huge")
    picks = {_em(u, rng, sens=sens) for _ in range(60)}
    assert picks == {i for i, x in enumerate(u) if x == max(u)}, f"{picks} {SEED_MSG}"


def test_large_factor_picks_the_maximum():
    rng = make_rng("greedy")
    u = [0.0, 5.0, 4.0, 1.0]
    assert all(_em(u, rng, eps_nano=1000 * EPS1) == 1 for _ in range(50))


def test_exponential_mechanism_equals_uncharged_core():
    u = np.array([0.3, -np.inf, 2.0, 1.1])
    rng1, rng2 = make_rng("same2"), make_rng("same2")
    a = [_em(u, rng1, eps_nano=700_000_000, sens=2.0) for _ in range(200)]
    b = [m.gumbel_max_choice(u, 0.7, 2.0, rng2) for _ in range(200)]
    assert a == b
    assert rng1.bit_generator.state == rng2.bit_generator.state


def test_exponential_mechanism_reference_gumbel_max():
    u = np.array([0.0, 1.0, 3.0, -np.inf, 2.0])
    eps, sens = 0.8, 2.0
    rng = make_rng("gref")
    ref = make_rng("gref")
    for _ in range(100):
        got = _em(u, rng, eps_nano=800_000_000, sens=sens)
        e = ref.standard_exponential(len(u))
        with np.errstate(invalid="ignore"):
            keys = np.where(np.isfinite(u), eps * u / (2 * sens) - np.log(e), -np.inf)
        assert got == int(np.argmax(keys)), SEED_MSG


# --------------------------------------------------------------------------- uncharged cores

def test_gumbel_max_choice_charges_nothing_and_validates():
    with pytest.raises(ParameterError):
        m.gumbel_max_choice([], 1.0, 1.0, make_rng("x"))
    with pytest.raises(ParameterError):
        m.gumbel_max_choice([1.0], 0.0, 1.0, make_rng("x"))
    with pytest.raises(ParameterError):
        m.gumbel_max_choice([1.0], 1.0, -1.0, make_rng("x"))
    with pytest.raises(ParameterError):
        m.gumbel_max_choice([1.0], 1.0, 1.0, np.random.RandomState(0))


def test_gumbel_max_index_matches_python_core_and_stream():
    gen = make_rng("utilities")
    for trial in range(200):
        n = int(gen.integers(1, 12))
        u = gen.normal(0, 3, size=n)
        u[gen.random(n) < 0.25] = -np.inf
        if not np.isfinite(u).any():
            u[0] = 0.0
        eps, sens = float(gen.uniform(0.01, 5)), float(gen.choice([1.0, 2.0, 0.5]))
        r1, r2 = make_rng(f"nb{trial}"), make_rng(f"nb{trial}")
        a = m.gumbel_max_choice(u, eps, sens, r1)
        b = m.gumbel_max_index(u, eps / (2 * sens), r2)
        assert a == b, f"trial {trial}: {u} {SEED_MSG}"
        assert r1.bit_generator.state == r2.bit_generator.state


def test_gumbel_max_index_edge_cases():
    rng = make_rng("nbedge")
    assert m.gumbel_max_index(np.zeros(0), 1.0, rng) == -1
    assert m.gumbel_max_index(np.full(3, -np.inf), 1.0, rng) == -1
    assert m.gumbel_max_index(np.array([-np.inf, 2.0, -np.inf]), 1.0, rng) == 1
    assert m.gumbel_max_index(np.array([1e308, -1e308, -1.7e308]), 1e300, rng) == 0
    with pytest.raises(ValueError):
        m.gumbel_max_index(np.array([1.0, np.nan]), 1.0, rng)
    with pytest.raises(ValueError):
        m.gumbel_max_index(np.array([1.0, np.inf]), 1.0, rng)


# --------------------------------------------------------------------------- MCMC acceptance

@pytest.mark.parametrize("delta", [0.0, 1e-12, 3.0, 1e308])
def test_mcmc_improvements_always_accepted(delta):
    assert m.mcmc_accept_probability(delta, 1.0, 2.0) == 1.0
    assert m.mcmc_accept(delta, 1.0, 2.0, 0.999999)
    assert m.mcmc_accept_jit(delta, 1.0, 2.0, 0.999999)


def test_mcmc_probability_formula():
    for delta, eps, sens in [(-1.0, 1.0, 1.0), (-3.0, 0.5, 2.0), (-0.01, 4.0, 1.0)]:
        expected = math.exp(eps * delta / (2 * sens))
        assert m.mcmc_accept_probability(delta, eps, sens) == pytest.approx(expected, rel=1e-15)
    assert m.mcmc_accept_probability(-1e308, 10.0, 1e-300) == 0.0
    assert m.mcmc_accept_probability(-math.inf, 1.0, 1.0) == 0.0


def test_mcmc_accept_threshold_and_jit_agree():
    gen = make_rng("mcmc")
    for _ in range(2000):
        delta = float(gen.normal(0, 3))
        eps, sens = float(gen.uniform(0.01, 3)), float(gen.choice([1.0, 2.0]))
        u = float(gen.random())
        p = min(1.0, math.exp(eps * delta / (2 * sens)))
        assert m.mcmc_accept(delta, eps, sens, u) == (u < p)
        assert m.mcmc_accept_jit(delta, eps, sens, u) == (u < p)
    assert not m.mcmc_accept(-math.inf, 1.0, 1.0, 0.0)
    assert not m.mcmc_accept_jit(-math.inf, 1.0, 1.0, 0.0)
    assert not m.mcmc_accept_jit(math.nan, 1.0, 1.0, 0.0)


@pytest.mark.parametrize("args", [(math.nan, 1.0, 1.0, 0.5), (math.inf, 1.0, 1.0, 0.5),
                                  (-1.0, 0.0, 1.0, 0.5), (-1.0, 1.0, 0.0, 0.5),
                                  (-1.0, 1.0, 1.0, 1.0), (-1.0, 1.0, 1.0, -0.1),
                                  (-1.0, 1.0, 1.0, math.nan)])
def test_mcmc_accept_rejects_bad_arguments(args):
    with pytest.raises(ParameterError):
        m.mcmc_accept(*args)
