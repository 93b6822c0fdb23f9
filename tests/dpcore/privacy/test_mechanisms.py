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
    s, t = m.discrete_laplace_scale(2, EPS1 // 2)
    assert (s, t) == (1, 4)  # Δ/ε = 2/0.5 as an exact fraction
    noise = m.discrete_laplace_sample(s, t, make_rng("dref"), size=6).reshape(2, 3)
    np.testing.assert_array_equal(out, counts + noise, err_msg=SEED_MSG)


def test_discrete_laplace_accepts_integral_floats_and_scalars():
    out = m.discrete_laplace(np.array([3.0, 4.0]), sensitivity=1, epsilon_nano=EPS1,
                             rng=make_rng("f"), accountant=PrivacyAccountant(EPS1), label="t")
    assert out.dtype == np.int64
    out0 = m.discrete_laplace(3, sensitivity=1, epsilon_nano=EPS1, rng=make_rng("f"),
                              accountant=PrivacyAccountant(EPS1), label="t")
    assert isinstance(out0, np.ndarray) and out0.shape == () and out0.dtype == np.int64


def test_discrete_laplace_huge_epsilon_noise_is_almost_surely_zero():
    # Exact sampler: P(noise ≠ 0) = 2a/(1 + a), a = e^-1000, so 50 draws are all 0.
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
    b = [m.exponential_choice(u, 0.7, 2.0, rng2) for _ in range(200)]
    assert a == b
    assert rng1.bit_generator.state == rng2.bit_generator.state


def test_exponential_mechanism_reference_inversion():
    # The draw is inversion of the float CDF: first i whose running sum of
    # exp(ε(u_i − max u)/(2Δ)) exceeds U·total, with one U = rng.random() per draw.
    u = np.array([0.0, 1.0, 3.0, -np.inf, 2.0])
    eps, sens = 0.8, 2.0
    rng = make_rng("gref")
    ref = make_rng("gref")
    for _ in range(100):
        got = _em(u, rng, eps_nano=800_000_000, sens=sens)
        running, cum = 0.0, []
        for x in u:
            running += math.exp((x - 3.0) * (eps / (2 * sens))) if x != -np.inf else 0.0
            cum.append(running)
        target = ref.random() * running
        assert got == next(i for i, c in enumerate(cum) if c > target), SEED_MSG
    assert rng.bit_generator.state == ref.bit_generator.state


# --------------------------------------------------------------------------- uncharged cores

def test_exponential_choice_charges_nothing_and_validates():
    with pytest.raises(ParameterError):
        m.exponential_choice([], 1.0, 1.0, make_rng("x"))
    with pytest.raises(ParameterError):
        m.exponential_choice([1.0], 0.0, 1.0, make_rng("x"))
    with pytest.raises(ParameterError):
        m.exponential_choice([1.0], 1.0, -1.0, make_rng("x"))
    with pytest.raises(ParameterError):
        m.exponential_choice([1.0], 1.0, 1.0, np.random.RandomState(0))


def test_exponential_index_matches_python_core_and_stream():
    gen = make_rng("utilities")
    for trial in range(200):
        n = int(gen.integers(1, 12))
        u = gen.normal(0, 3, size=n)
        u[gen.random(n) < 0.25] = -np.inf
        if not np.isfinite(u).any():
            u[0] = 0.0
        eps, sens = float(gen.uniform(0.01, 5)), float(gen.choice([1.0, 2.0, 0.5]))
        r1, r2 = make_rng(f"nb{trial}"), make_rng(f"nb{trial}")
        a = m.exponential_choice(u, eps, sens, r1)
        b = m.exponential_index(u, eps / (2 * sens), r2)
        assert a == b, f"trial {trial}: {u} {SEED_MSG}"
        assert r1.bit_generator.state == r2.bit_generator.state


def test_exponential_index_edge_cases():
    rng = make_rng("nbedge")
    assert m.exponential_index(np.zeros(0), 1.0, rng) == -1
    assert m.exponential_index(np.full(3, -np.inf), 1.0, rng) == -1
    assert m.exponential_index(np.array([-np.inf, 2.0, -np.inf]), 1.0, rng) == 1
    assert m.exponential_index(np.array([1e308, -1e308, -1.7e308]), 1e300, rng) == 0
    with pytest.raises(ValueError):
        m.exponential_index(np.array([1.0, np.nan]), 1.0, rng)
    with pytest.raises(ValueError):
        m.exponential_index(np.array([1.0, np.inf]), 1.0, rng)


def test_former_names_are_the_same_functions():
    # The kernels still call the draw by its former name.
    assert m.gumbel_max_index is m.exponential_index
    assert m.gumbel_max_choice is m.exponential_choice


def test_exponential_index_draws_one_uniform_whatever_the_scores():
    for scores in (np.zeros(0), np.full(3, -np.inf), np.array([5.0, -1e300, 2.0]),
                   np.linspace(-50, 0, 4000)):
        r1, r2 = make_rng("stream"), make_rng("stream")
        m.exponential_index(scores, 0.25, r1)
        r2.random()
        assert r1.bit_generator.state == r2.bit_generator.state


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


# --------------------------------------------------------------------------- exact samplers

def test_discrete_laplace_scale_is_the_charged_fraction():
    from fractions import Fraction
    for delta, eps_nano in [(1, EPS1), (1, 333_333_333), (2, EPS1 // 2), (7, 12_345),
                            (3 * 2**30, 450_000_000), (10**6, 10**12)]:
        s, t = m.discrete_laplace_scale(delta, eps_nano)
        assert math.gcd(s, t) == 1
        assert Fraction(s, t) == Fraction(eps_nano, delta * 10**9)  # ε/Δ exactly


def test_discrete_laplace_uses_the_exact_sampler_at_the_charged_scale():
    # A sensitivity so large that the scale's numerator needs two 62-bit limbs
    # (MC-GEN's second moments): same sampler, same stream, as discrete_laplace_sample.
    for delta, eps_nano in [(1, EPS1), (5 * 2**30, 333_333_333), (7, 12_345_678)]:
        s, t = m.discrete_laplace_scale(delta, eps_nano)
        out = m.discrete_laplace(np.zeros(30, dtype=np.int64), sensitivity=delta,
                                 epsilon_nano=eps_nano, rng=make_rng(f"at{delta}"),
                                 accountant=PrivacyAccountant(eps_nano), label="t")
        ref = m.discrete_laplace_sample(s, t, make_rng(f"at{delta}"), size=30)
        np.testing.assert_array_equal(out, ref, err_msg=SEED_MSG)
        scale = delta * 10**9 / eps_nano
        assert np.all(np.abs(out) < 60 * scale)
        assert np.count_nonzero(out) > 0 or scale < 0.2


def test_float_geometric_cut_that_the_exact_sampler_removes():
    # The former sampler: p = 1 − e^{−ε/Δ} rounds to exactly 1.0 once ε/Δ ≥ 38 (e^-38 is
    # below half the float spacing under 1), and NumPy's geometric(1.0) is always 1, so the
    # noise was exactly 0 with probability 1.
    assert -math.expm1(-38.0) == 1.0 and -math.expm1(-37.0) < 1.0
    assert np.all(make_rng("cut").geometric(1.0, size=1000) == 1)


class ScriptedIntegers:
    """A stand-in generator for the Python-int path: ``integers(0, n)`` returns scripted
    values (checked to lie in range), so one exact path of the sampler can be replayed."""

    def __init__(self, values):
        self.values = list(values)
        self.bit_generator = None

    def integers(self, low, high):
        value = self.values.pop(0)
        assert low == 0 and 0 <= value < high, (value, high)
        return value


# One Bernoulli(e^-1) draw of CKS20 Algorithm 1 with γ = 1 (num = den = 1): every
# Bernoulli(γ/K) is Bernoulli(1/1)·Bernoulli(1/K), and Bernoulli(1) takes no draw. K = 2 →
# Bernoulli(1/2) succeeds (0 of 2); K = 3 → Bernoulli(1/3) fails (1 of 3): the loop stops at
# odd K → True. Stopping at K = 2 (1 of 2) → False.
_EXP1_TRUE = [0, 1]
_EXP1_FALSE = [1]


@pytest.mark.parametrize("eps_over_delta,v,expected", [(40, 45, 1), (40, 39, 0), (41, 130, 3),
                                                       (100, 250, 2)])
def test_noise_beyond_the_float_cut_is_reachable(eps_over_delta, v, expected):
    """At ε/Δ ≥ 40 (scale t/s = 1/40) the sampler returns ±⌊V/40⌋ where V counts the
    successes of Bernoulli(e^-1) before the first failure, a loop without a cap: a path with
    V = 45 gives noise 1, V = 130 at ε/Δ = 41 gives 3. So P(noise ≠ 0) is P(V ≥ ε/Δ)·(sign
    acceptance) = 2a/(1 + a) with a = e^{−ε/Δ} (the V law is tested statistically in
    tests/dpcore/privacy/test_mechanisms_statistical.py), not 0 as with the float sampler."""
    s, t = eps_over_delta, 1
    # U = 0 (t = 1) and Bernoulli(exp(−0/1)) = 1 take no draw; then V, then the sign.
    script = _EXP1_TRUE * v + _EXP1_FALSE
    script += [0]       # sign: positive (y = 0 with a positive sign is the output 0)
    rng = ScriptedIntegers(script)
    assert m._discrete_laplace_py(s, t, rng) == expected
    assert rng.values == []


@pytest.mark.parametrize("gamma_num,gamma_den", [(40, 1), (1000, 7), (10**6, 3)])
def test_bernoulli_exp_large_gamma_path_is_reachable(gamma_num, gamma_den):
    """Bernoulli(exp(−γ)) at large γ is ⌊γ⌋ Bernoulli(e^-1) draws and one for the
    fractional part: True exactly when all succeed (probability e^{−γ}, no float cut)."""
    whole, frac = divmod(gamma_num, gamma_den)
    script = _EXP1_TRUE * whole
    # fractional part γ_f = frac/den: Bernoulli(γ_f) fails at K = 1 → odd → True
    # (γ = whole exactly: the last of the `whole` draws is the unit-interval one.)
    script += [gamma_den - 1] if frac else []
    rng = ScriptedIntegers(script)
    assert m._bernoulli_exp_py(gamma_num, gamma_den, rng) is True
    assert rng.values == []
    # and the first failure of a Bernoulli(e^-1) ends it: False
    assert m._bernoulli_exp_py(gamma_num, gamma_den,
                               ScriptedIntegers(_EXP1_TRUE * 3 + _EXP1_FALSE)) is False


def test_bernoulli_exp_validates_and_handles_any_size():
    rng = make_rng("bexp")
    assert m.bernoulli_exp(0, 5, rng) is True  # exp(0) = 1
    for bad in [(-1, 2), (1, 0), (1.5, 2), (True, 3)]:
        with pytest.raises(ParameterError):
            m.bernoulli_exp(*bad, rng)
    assert isinstance(m.bernoulli_exp(3 * 2**70, 2**72, rng), bool)  # Python-int path


# --------------------------------------------------------------------------- float-path bounds
# The exponential mechanism and the MCMC acceptance keep float arithmetic with a stated
# bound (docs/PRIVACY.md, "Numerics of each sampler"). These tests compute the *exact*
# output distribution of the float code (u = rng.random() is uniform on the 2^53 multiples
# of 2^-53 in [0, 1), and the draw is monotone in u, so each probability is a count of grid
# points found by bisection) and compare it with the exact distribution computed in
# 60-digit decimal arithmetic on the same float inputs.

_GRID = 2**53


def _grid_points_below(c: float, total: float) -> int:
    """#{k ∈ [0, 2^53): fl(k·2^-53·total) < c}: the smallest k with fl(...) ≥ c."""
    lo, hi = 0, _GRID
    while lo < hi:
        mid = (lo + hi) // 2
        if (mid * 2.0**-53) * total >= c:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _float_em_counts(scores, factor):
    """Exact output distribution of exponential_index, in grid points (sum 2^53)."""
    scores = np.asarray(scores, dtype=np.float64)
    cum = np.empty(scores.shape[0])
    m.exponential_cumulative_weights(scores, factor, cum)
    total = float(cum[-1])
    bounds = [0] + [_grid_points_below(float(c), total) for c in cum]
    return [bounds[i + 1] - bounds[i] for i in range(len(cum))]


def _exact_em_probabilities(scores, factor):
    from decimal import Decimal, localcontext
    with localcontext() as ctx:
        ctx.prec = 60
        finite = [s for s in scores if s != -math.inf]
        top = Decimal(max(finite))
        w = [((Decimal(s) - top) * Decimal(factor)).exp() if s != -math.inf else Decimal(0)
             for s in scores]
        total = sum(w)
        return [x / total for x in w]


def _em_tv_in_grid_units(scores, factor):
    from decimal import Decimal, localcontext
    counts = _float_em_counts(scores, factor)
    exact = _exact_em_probabilities(scores, factor)
    assert sum(counts) == _GRID
    with localcontext() as ctx:
        ctx.prec = 60
        return sum(abs(Decimal(c) - p * _GRID) for c, p in zip(counts, exact)) / 2


def _extreme_utilities():
    gen = make_rng("extreme")
    yield "CMS candidates, small ε", gen.normal(0, 300, 4864), 0.005 / 4
    yield "Gini-like, sharp", gen.uniform(0, 7200, 4864), 0.25
    yield "huge magnitudes", np.array([1e308, 1e308, -1e308, 5e307, -1.7e308]), 1e-300
    yield "huge factor", np.array([0.0, 1e-10, -1e-10, 2e-10, 2e-10]), 1e12
    yield "near-ties", 1.0 + np.arange(3000) * 1e-15, 1.0
    yield "half −inf", np.where(gen.random(1000) < 0.5, -np.inf, gen.normal(0, 5, 1000)), 1.0
    yield "tails below 2^-53", -np.arange(2000, dtype=np.float64), 1.0
    yield "tails at the float cut", np.array([0.0, -36.0, -37.0, -38.0, -40.0, -44.0, -745.0,
                                              -746.0]), 1.0
    yield "20000 equal", np.full(20000, 3.25), 0.5
    yield "two candidates, one at 2^-60", np.array([0.0, -60 * math.log(2)]), 1.0


@pytest.mark.parametrize("case", list(_extreme_utilities()), ids=lambda c: c[0])
def test_exponential_index_total_variation_bound_holds_exactly(case):
    _, scores, factor = case
    n = len(scores)
    tv_units = _em_tv_in_grid_units(list(map(float, scores)), factor)
    bound_units = 4 * n + 2  # TV ≤ (4n + 2)·2^-53 = EXPONENTIAL_TV_BOUND_UNIT·(4n + 2)
    assert m.EXPONENTIAL_TV_BOUND_UNIT == 2.0**-53
    assert tv_units <= bound_units, f"TV = {float(tv_units)}·2^-53 > {bound_units}·2^-53"


def test_exponential_bound_test_catches_a_biased_sampler():
    # Power: a sampler that forgot the factor 2 (ε/Δ instead of ε/(2Δ)) is far outside.
    scores = [0.0, 1.0, 2.0, 3.0]
    counts = _float_em_counts(scores, 1.0)
    exact = _exact_em_probabilities(scores, 0.5)
    tv = sum(abs(c / _GRID - float(p)) for c, p in zip(counts, exact)) / 2
    assert tv > 1e3 * (4 * 4 + 2) * 2.0**-53


def _float_accept_probability(x_delta, eps, sens):
    """Exact P(mcmc_accept_jit(x_delta, eps, sens, u)) for u = rng.random(), in grid points."""
    lo, hi = 0, _GRID  # accept ⇔ u < threshold: find the first grid point rejected
    while lo < hi:
        mid = (lo + hi) // 2
        if m.mcmc_accept_jit(x_delta, eps, sens, mid * 2.0**-53):
            lo = mid + 1
        else:
            hi = mid
    return lo


def _exact_accept_probability(delta, eps, sens, log_ratio=0.0):
    from decimal import Decimal, localcontext
    with localcontext() as ctx:
        ctx.prec = 60
        x = Decimal(eps) * Decimal(delta) / (2 * Decimal(sens)) + Decimal(log_ratio)
        return Decimal(1) if x >= 0 else x.exp()


MCMC_CASES = [(-1.0, 1.0, 1.0), (-0.3, 2.0, 2.0), (-5e-300, 1.0, 1.0), (-1e-16, 0.7, 2.0),
              (-36.7, 2.0, 1.0), (-37.5, 2.0, 1.0), (-40.0, 2.0, 1.0), (-44.0, 2.0, 1.0),
              (-700.0, 2.0, 1.0), (-745.1, 2.0, 1.0), (-746.0, 2.0, 1.0), (-1e300, 1e-5, 3.0),
              (-1e308, 10.0, 1e-300), (-3.0, 1e-9, 1.0), (-123.456, 0.005, 2.0),
              (0.0, 1.0, 1.0), (2.5, 1.0, 1.0)]


@pytest.mark.parametrize("delta,eps,sens", MCMC_CASES)
def test_mcmc_accept_deviation_bound_holds_exactly(delta, eps, sens):
    from decimal import Decimal
    accepted = _float_accept_probability(delta, eps, sens)
    exact = _exact_accept_probability(delta, eps, sens)
    deviation = abs(Decimal(accepted) / _GRID - exact)
    assert deviation <= Decimal(m.MCMC_ACCEPT_TV_BOUND), (delta, eps, sens, float(deviation))


@pytest.mark.parametrize("log_ratio", [-20.0, -5.3, -0.7, 0.7, 5.3, 20.0])
@pytest.mark.parametrize("delta,eps,sens", MCMC_CASES[:12])
def test_mcmc_hastings_shift_deviation_bound_holds_exactly(delta, eps, sens, log_ratio):
    """The kernels shift Δs by (2Δ/ε)·log r before the test; bound 2^-51 + 2^-50·|log r|."""
    from decimal import Decimal
    shifted = delta + log_ratio * (2.0 * sens / eps)  # the kernels' float arithmetic
    accepted = _float_accept_probability(shifted, eps, sens)
    exact = _exact_accept_probability(delta, eps, sens, log_ratio)
    deviation = abs(Decimal(accepted) / _GRID - exact)
    bound = Decimal(m.MCMC_ACCEPT_TV_BOUND) + Decimal(2.0**-50) * Decimal(abs(log_ratio))
    assert deviation <= bound, (delta, eps, sens, log_ratio, float(deviation))


def test_mcmc_bound_test_catches_a_biased_acceptance():
    # Power: an acceptance that forgot the factor 2 (exp(εΔs/Δ)) deviates by ~0.23 here.
    from decimal import Decimal
    accepted = _float_accept_probability(-1.0, 2.0, 1.0)  # exp(−1) in the float code
    wrong_exact = _exact_accept_probability(-1.0, 1.0, 1.0)  # exp(−0.5)
    assert abs(Decimal(accepted) / _GRID - wrong_exact) > 10**6 * Decimal(m.MCMC_ACCEPT_TV_BOUND)
