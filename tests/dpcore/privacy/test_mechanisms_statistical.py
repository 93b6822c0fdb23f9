"""Statistical tests of dpcore.privacy.mechanisms: calibration, power and neighbour
(ε lower-bound) tests.

Patterns from OpenDP / diffprivlib / DP-Sniper:

* calibration: KS (continuous) or χ² (discrete, categorical) goodness of fit of the
  mechanism's output against its exact distribution, α = 1e-6, plus a power check that
  the same samples reject a mis-scaled distribution (×0.7 and ×1.3 the scale);
* neighbour test: for an event E, Clopper–Pearson bounds on P[M(D) ∈ E] and
  P[M(D′) ∈ E] give a lower bound on ε that holds with probability ≥ 1 − α; it must
  not exceed the ε charged, and a deliberately broken mechanism (half the noise) must
  be caught (its lower bound exceeds ε).

Seeds: fixed default, override with the environment variable DPRM_TEST_SEED; every
assertion prints it. With α = 1e-6 a correct mechanism fails a test by chance with
probability ≤ 1e-6.
"""

from __future__ import annotations

import math
import os
import zlib

import numpy as np
import pytest
from numba import njit
from scipy import special, stats

from dpcore.privacy import mechanisms as m
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.audit import clopper_pearson_lower, clopper_pearson_upper

DEFAULT_SEED = 20230807
BASE_SEED = int(os.environ.get("DPRM_TEST_SEED", DEFAULT_SEED))
SEED_MSG = f"(DPRM_TEST_SEED={BASE_SEED}; rerun with the same value to reproduce)"
ALPHA = 1e-6
NANO = 10**9


def make_rng(name: str) -> np.random.Generator:
    return np.random.default_rng([BASE_SEED, zlib.crc32(name.encode())])


def nano(eps: float) -> int:
    return round(eps * NANO)


# --------------------------------------------------------------------------- helpers

def chi2_pvalue(observed: np.ndarray, expected_p: np.ndarray, n: int) -> float:
    """χ² goodness of fit over ordered bins; adjacent bins are merged until each
    has expected count ≥ 5 (so tails are pooled)."""
    expected = expected_p * n
    obs_bins, exp_bins = [], []
    o_acc = e_acc = 0.0
    for o, e in zip(observed, expected):
        o_acc += o
        e_acc += e
        if e_acc >= 5:
            obs_bins.append(o_acc)
            exp_bins.append(e_acc)
            o_acc = e_acc = 0.0
    if e_acc > 0 or o_acc > 0:  # leftover tail: merge into the last bin
        obs_bins[-1] += o_acc
        exp_bins[-1] += e_acc
    obs_bins, exp_bins = np.array(obs_bins), np.array(exp_bins)
    assert len(obs_bins) >= 2
    exp_bins *= obs_bins.sum() / exp_bins.sum()  # remove float round-off in Σp
    return float(stats.chisquare(obs_bins, exp_bins).pvalue)


def discrete_laplace_pmf(ks: np.ndarray, scale: float) -> np.ndarray:
    """Exact pmf of the discrete Laplace with P(k) ∝ exp(−|k|/scale)."""
    a = math.exp(-1.0 / scale)
    return (1 - a) / (1 + a) * np.power(a, np.abs(ks))


def discrete_laplace_binned(samples: np.ndarray, scale: float):
    """Observed counts and exact probabilities on bins (−∞, −K], −K+1..K−1, [K, ∞)."""
    n = samples.size
    a = math.exp(-1.0 / scale)
    # K: the first k whose two-sided tail P(|Z| ≥ k) has expected count < 5.
    k_cut = 1
    while n * 2 * a**k_cut / (1 + a) >= 5:
        k_cut += 1
    ks = np.arange(-k_cut + 1, k_cut)
    p_inner = discrete_laplace_pmf(ks, scale)
    p_tail = a**k_cut / (1 + a)  # P(Z ≥ K) = P(Z ≤ −K)
    probs = np.concatenate([[p_tail], p_inner, [p_tail]])
    clipped = np.clip(samples, -k_cut, k_cut)
    observed = np.bincount(clipped + k_cut, minlength=2 * k_cut + 1)
    return observed, probs


def clopper_pearson(k: int, n: int, confidence: float) -> tuple[float, float]:
    """The exact two-sided interval at ``confidence``, from the audit's one-sided bounds."""
    tail = (1.0 - confidence) / 2
    return clopper_pearson_lower(k, n, tail), clopper_pearson_upper(k, n, tail)


def epsilon_lower_bound(k1: int, n1: int, k2: int, n2: int, alpha: float = ALPHA) -> float:
    """A (1 − α)-confidence lower bound on the ε of a mechanism from one event E.

    k1 of n1 runs on D and k2 of n2 runs on D′ landed in E. With Clopper–Pearson
    intervals at level 1 − α/2 each (Bonferroni), with probability ≥ 1 − α both true
    probabilities lie in their intervals, and then ε-DP implies
    ε ≥ ln(p1/p2), ln(p2/p1), ln((1−p1)/(1−p2)), ln((1−p2)/(1−p1)) (E and its
    complement, both directions), each bounded below by the interval ends.
    """
    lo1, hi1 = clopper_pearson(k1, n1, 1 - alpha / 2)
    lo2, hi2 = clopper_pearson(k2, n2, 1 - alpha / 2)
    candidates = [0.0]
    for num, den in ((lo1, hi2), (lo2, hi1), (1 - hi1, 1 - lo2), (1 - hi2, 1 - lo1)):
        if num > 0 and den > 0:
            candidates.append(math.log(num / den))
        elif num > 0:
            candidates.append(math.inf)
    return max(candidates)


# --------------------------------------------------------------------------- Laplace calibration

LAPLACE_CASES = [(1.0, 1.0), (0.5, 2.0), (2.5, 1.0), (0.1, 3.0)]


@pytest.mark.parametrize("eps,sens", LAPLACE_CASES)
def test_laplace_ks_calibration_and_power(eps, sens):
    n = 20_000
    rng = make_rng(f"ks{eps},{sens}")
    true = 17.0
    acc = PrivacyAccountant(nano(eps))
    out = m.laplace(np.full(n, true), sensitivity=sens, epsilon_nano=nano(eps), rng=rng,
                    accountant=acc, label="ks")
    noise = out - true
    b = sens / eps
    p_ok = stats.kstest(noise, "laplace", args=(0.0, b)).pvalue
    assert p_ok > ALPHA, f"Laplace(0, {b}) rejected: p = {p_ok:.3g} {SEED_MSG}"
    for factor in (0.7, 1.3):
        p_bad = stats.kstest(noise, "laplace", args=(0.0, factor * b)).pvalue
        assert p_bad < ALPHA, (f"KS cannot tell scale {factor}·b from b (p = {p_bad:.3g}): "
                               f"the test has no power {SEED_MSG}")
    # centred on the true value (the KS test above also covers location)
    assert abs(np.median(noise)) < 0.1 * b, SEED_MSG


# --------------------------------------------------------------------------- discrete Laplace

DISCRETE_CASES = [(1.0, 1), (0.5, 1), (2.0, 1), (1.0, 3), (0.25, 2)]


@pytest.mark.parametrize("eps,sens", DISCRETE_CASES)
def test_discrete_laplace_chi2_calibration_and_power(eps, sens):
    n = 20_000
    rng = make_rng(f"chi{eps},{sens}")
    true = 40
    out = m.discrete_laplace(np.full(n, true), sensitivity=sens, epsilon_nano=nano(eps),
                             rng=rng, accountant=PrivacyAccountant(nano(eps)), label="chi2")
    noise = out - true
    scale = sens / eps
    observed, probs = discrete_laplace_binned(noise, scale)
    p_ok = chi2_pvalue(observed, probs, n)
    assert p_ok > ALPHA, (f"discrete Laplace scale {scale} rejected: p = {p_ok:.3g} "
                          f"{SEED_MSG}")
    for factor in (0.7, 1.3):
        observed_b, probs_b = discrete_laplace_binned(noise, factor * scale)
        p_bad = chi2_pvalue(observed_b, probs_b, n)
        assert p_bad < ALPHA, (f"χ² cannot tell scale {factor}·{scale} from {scale} "
                               f"(p = {p_bad:.3g}) {SEED_MSG}")


# Exact CKS20 sampler on its three arithmetic paths: int64, two 62-bit limbs, Python ints.
CKS_CASES = [
    # (s, t, draws): P(k) ∝ exp(−|k|·s/t), scale t/s
    (1, 1, 200_000),
    (3, 10, 200_000),
    (7, 2, 200_000),                                   # scale 0.29: mostly 0
    (1, 10**6, 200_000),                               # scale 10^6: binned tails
    (333_333_333, 5 * 2**30 * 10**9, 100_000),         # two limbs (MC-GEN moments), 1.6e10
    ((1 << 62) // 2 + 7, (1 << 62) + 12_345, 200_000),  # two limbs, scale ~2
    ((1 << 64) + 1, 3 * (1 << 64) + 5, 20_000),        # s ≥ 2^62: Python ints, scale ~3
]


def discrete_laplace_scale_binned(samples: np.ndarray, scale: float, bins: int = 12):
    """Observed counts and exact probabilities for large scales: 0, then signed bins of
    |Z| ∈ [m_j, m_{j+1}) with m_j = max(1, round(j·scale/2)), the last one open-ended.
    P(Z ≥ m) = a^m/(1 + a) for m ≥ 1, a = e^{−1/scale}."""
    edges = sorted({max(1, round(j * scale / 2)) for j in range(bins)})
    def tail(m):  # P(Z ≥ m), m ≥ 1
        return math.exp(-m / scale) / (1 + math.exp(-1 / scale))
    p_zero = 1 - 2 * tail(1)
    probs, observed = [p_zero], [int(np.count_nonzero(samples == 0))]
    for sign in (1, -1):
        z = samples * sign
        for lo, hi in zip(edges, edges[1:] + [None]):
            if hi is None:
                probs.append(tail(lo))
                observed.append(int(np.count_nonzero(z >= lo)))
            else:
                probs.append(tail(lo) - tail(hi))
                observed.append(int(np.count_nonzero((z >= lo) & (z < hi))))
    return np.array(observed), np.array(probs)


@pytest.mark.slow
@pytest.mark.parametrize("s,t,n", CKS_CASES)
def test_cks_discrete_laplace_exact_pmf_chi2(s, t, n):
    """χ² of the exact sampler's draws against the exact pmf (tails pooled; bins of half a
    scale when the scale is large), α = 1e-6, with the power check that the same draws
    reject scales ×0.97 and ×1.03."""
    noise = m.discrete_laplace_sample(s, t, make_rng(f"cks{s},{t}"), size=n)
    scale = t / s
    binned = discrete_laplace_binned if scale < 50 else discrete_laplace_scale_binned
    observed, probs = binned(noise, scale)
    p_ok = chi2_pvalue(observed, probs, n)
    assert p_ok > ALPHA, f"CKS scale {scale:.4g} rejected: p = {p_ok:.3g} {SEED_MSG}"
    if n >= 200_000 and scale > 0.5:
        for factor in (0.97, 1.03):
            observed_b, probs_b = binned(noise, factor * scale)
            p_bad = chi2_pvalue(observed_b, probs_b, n)
            assert p_bad < ALPHA, (f"χ² cannot tell scale ×{factor} (p = {p_bad:.3g}) "
                                   f"{SEED_MSG}")


@njit
def _bernoulli_exp_successes(num, den, rng, n):
    hits = 0
    for _ in range(n):
        hits += m._bernoulli_exp_jit(num, den, rng)
    return hits


@pytest.mark.slow
@pytest.mark.parametrize("num,den,n", [(0, 5, 10_000), (3, 10, 2_000_000), (1, 1, 2_000_000),
                                       (5, 2, 2_000_000), (7, 3, 2_000_000),
                                       (39, 4, 10_000_000), (12, 1, 30_000_000)])
def test_bernoulli_exp_rate_is_exp_minus_gamma(num, den, n):
    """Bernoulli(exp(−γ)) (CKS20 Algorithm 1) hits exp(−num/den), down to e^-12 ≈ 6·10⁻⁶:
    the integer-γ cases are also the law P(V ≥ k) = e^{−k} of the uncapped geometric loop
    that makes the discrete Laplace's support unbounded."""
    hits = int(_bernoulli_exp_successes(np.int64(num), np.int64(den), make_rng(f"bx{num}"), n))
    p = math.exp(-num / den)
    if p == 1.0:
        assert hits == n
        return
    pval = stats.binomtest(hits, n, p).pvalue
    assert pval > ALPHA, f"{hits}/{n} vs e^-{num}/{den} = {p:.4g} (p = {pval:.3g}) {SEED_MSG}"
    if n >= 2_000_000:  # power: exp(−1.1γ) is rejected by the same counts
        assert stats.binomtest(hits, n, math.exp(-1.1 * num / den)).pvalue < ALPHA


@pytest.mark.slow
def test_noise_is_nonzero_at_large_epsilon_with_the_exact_probability():
    """At ε/Δ = 12 (the float sampler still draws here; it rounds to 0 from ~38 on) the exact
    sampler's P(noise ≠ 0) = 2a/(1 + a), a = e^-12, about 1.2·10⁻⁵."""
    n = 20_000_000
    noise = m.discrete_laplace_sample(12, 1, make_rng("nonzero12"), size=n)
    a = math.exp(-12.0)
    p = 2 * a / (1 + a)
    nonzero = int(np.count_nonzero(noise))
    assert nonzero > 0
    pval = stats.binomtest(nonzero, n, p).pvalue
    assert pval > ALPHA, f"{nonzero}/{n} non-zero vs {p:.4g} (p = {pval:.3g}) {SEED_MSG}"
    assert set(np.unique(noise)) <= {-2, -1, 0, 1, 2}


def test_discrete_laplace_pmf_helper_is_a_distribution():
    ks = np.arange(-2000, 2001)
    for scale in (0.5, 1.0, 3.0, 20.0):
        assert discrete_laplace_pmf(ks, scale).sum() == pytest.approx(1.0, abs=1e-12)


# --------------------------------------------------------------------------- exponential mechanism

EM_CASES = [
    # (utilities, eps, sens)
    ([0.0, 1.0, 2.0, 3.0], 1.0, 1.0),
    ([5.0, 5.0, 5.0, 5.0, 5.0], 1.0, 2.0),  # all equal: uniform
    ([-np.inf, 0.0, 2.0, -np.inf, 1.0, -3.0], 2.0, 2.0),  # −inf never chosen
    ([1e15, 1e15 + 2.0, 1e15 + 4.0], 1.0, 2.0),  # huge values, modest gaps
    ([-40.0, -38.0, -45.0, -39.0], 0.7, 1.0),
]


def _draw_em(u, eps, sens, n, rng):
    eps_nano = nano(eps)
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        # a fresh accountant per draw keeps spend O(1); it is the real accountant
        out[i] = m.exponential_mechanism(u, sensitivity=sens, epsilon_nano=eps_nano, rng=rng,
                                         accountant=PrivacyAccountant(eps_nano), label="em")
    return out


def _softmax(u, factor):
    u = np.asarray(u, dtype=np.float64)
    finite = np.isfinite(u)
    p = np.zeros(u.size)
    p[finite] = special.softmax(factor * (u[finite] - u[finite].max()))
    return p


@pytest.mark.slow
@pytest.mark.parametrize("u,eps,sens", EM_CASES)
def test_exponential_mechanism_chi2_against_softmax(u, eps, sens):
    n = 20_000
    rng = make_rng(f"em{u}{eps}{sens}")
    picks = _draw_em(u, eps, sens, n, rng)
    counts = np.bincount(picks, minlength=len(u))
    probs = _softmax(u, eps / (2 * sens))
    assert np.all(counts[probs == 0] == 0), f"a −inf candidate was chosen {SEED_MSG}"
    support = probs > 0
    # merge categories with expected < 5 (sorted by probability so they pool together)
    order = np.argsort(-probs[support])
    p_ok = chi2_pvalue(counts[support][order], probs[support][order], n)
    assert p_ok > ALPHA, f"softmax rejected: p = {p_ok:.3g}, counts {counts} {SEED_MSG}"
    if np.ptp(np.asarray(u)[support]) > 0:
        # power: the same counts reject a mechanism that forgot the factor 2 (ε·u/Δ)
        wrong = _softmax(u, eps / sens)
        p_bad = chi2_pvalue(counts[support][order], wrong[support][order], n)
        assert p_bad < ALPHA, f"χ² cannot see a doubled factor (p = {p_bad:.3g}) {SEED_MSG}"


# --------------------------------------------------------------------------- neighbour tests

def _laplace_event_counts(mech, c, t, n, rng):
    return int(np.count_nonzero(mech(np.full(n, c), rng) > t))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["continuous", "discrete"])
def test_counting_mechanism_neighbour_epsilon_bound(kind):
    """Counts c (D) and c+1 (D′), Δ = 1, event E = {output > c + 1} (continuous) or
    {output ≥ c + 1} (discrete): P[E | D′] / P[E | D] = e^ε exactly, the tightest event.
    The correct mechanism's lower bound stays ≤ ε; the broken one (half the noise
    scale: calibrated to Δ/2, resp. to 2ε) has ln-ratio 2ε and must be caught."""
    eps, n, c = 1.0, 200_000, 50
    eps_nano = nano(eps)

    def correct(values, rng):
        if kind == "continuous":
            return m.laplace(values, sensitivity=1.0, epsilon_nano=eps_nano, rng=rng,
                             accountant=PrivacyAccountant(eps_nano), label="D")
        return m.discrete_laplace(values, sensitivity=1, epsilon_nano=eps_nano, rng=rng,
                                  accountant=PrivacyAccountant(eps_nano), label="D")

    def broken(values, rng):  # half the noise scale Δ/ε
        if kind == "continuous":
            return m.laplace(values, sensitivity=0.5, epsilon_nano=eps_nano, rng=rng,
                             accountant=PrivacyAccountant(eps_nano), label="D")
        return m.discrete_laplace(values, sensitivity=1, epsilon_nano=2 * eps_nano, rng=rng,
                                  accountant=PrivacyAccountant(2 * eps_nano), label="D")

    # continuous: E = {out > c + 1}: P[E|D′] = 1/2, P[E|D] = e^{−ε}/2.
    # discrete: E = {out ≥ c + 1}: P[E|D′] = 1/(1+a), P[E|D] = a/(1+a), a = e^{−ε}.
    t = c + 1 if kind == "continuous" else c + 0.5
    rng = make_rng(f"neigh-{kind}")
    k_d = _laplace_event_counts(correct, c, t, n, rng)
    k_d2 = _laplace_event_counts(correct, c + 1, t, n, rng)
    lb = epsilon_lower_bound(k_d, n, k_d2, n)
    assert lb <= eps, (f"{kind} Laplace looks less private than ε = {eps}: lower bound "
                       f"{lb:.4f} (counts {k_d}, {k_d2} of {n}) {SEED_MSG}")
    assert lb > 0.9 * eps, f"the event is not tight (lower bound {lb:.4f}) {SEED_MSG}"

    kb_d = _laplace_event_counts(broken, c, t, n, rng)
    kb_d2 = _laplace_event_counts(broken, c + 1, t, n, rng)
    lb_broken = epsilon_lower_bound(kb_d, n, kb_d2, n)
    assert lb_broken > eps, (f"the half-noise {kind} mechanism was NOT caught: lower bound "
                             f"{lb_broken:.4f} ≤ ε = {eps} {SEED_MSG}")


@pytest.mark.slow
def test_exponential_mechanism_neighbour_epsilon_bound():
    """m = 10 candidates, Δ = 2. On D candidate 0 has utility Δ and the others 0; on D′
    candidate 0 has 0 and the others Δ (every utility moves by exactly Δ). With
    E = {choose 0}: ln(P[E|D]/P[E|D′]) = ln(e^{ε/2}(1 + 9e^{ε/2}) / (e^{ε/2} + 9)) ≈ 0.906
    for ε = 1; the broken mechanism (half the noise: calibrated to Δ/2) reaches ≈ 1.80."""
    eps, sens, n, cands = 1.0, 2.0, 40_000, 10
    u_d = np.zeros(cands)
    u_d[0] = sens
    u_d2 = np.full(cands, sens)
    u_d2[0] = 0.0
    rng = make_rng("neigh-em")

    k_d = int(np.count_nonzero(_draw_em(u_d, eps, sens, n, rng) == 0))
    k_d2 = int(np.count_nonzero(_draw_em(u_d2, eps, sens, n, rng) == 0))
    lb = epsilon_lower_bound(k_d, n, k_d2, n)
    assert lb <= eps, (f"exponential mechanism looks less private than ε = {eps}: lower "
                       f"bound {lb:.4f} (counts {k_d}, {k_d2} of {n}) {SEED_MSG}")
    assert lb > 0.7 * eps, f"the test lost its power (lower bound {lb:.4f}) {SEED_MSG}"

    kb_d = int(np.count_nonzero(_draw_em(u_d, eps, sens / 2, n, rng) == 0))
    kb_d2 = int(np.count_nonzero(_draw_em(u_d2, eps, sens / 2, n, rng) == 0))
    lb_broken = epsilon_lower_bound(kb_d, n, kb_d2, n)
    assert lb_broken > eps, (f"the half-noise exponential mechanism was NOT caught: lower "
                             f"bound {lb_broken:.4f} ≤ ε = {eps} {SEED_MSG}")


@pytest.mark.slow
def test_exponential_index_matches_softmax():
    """The numba kernel used inside createDTExpMech follows the softmax too."""
    u = np.array([0.0, 1.5, -np.inf, 3.0, 2.0, -1.0])
    factor = 0.4
    rng = make_rng("nb-softmax")
    n = 50_000
    picks = np.array([m.exponential_index(u, factor, rng) for _ in range(n)])
    counts = np.bincount(picks, minlength=u.size)
    probs = _softmax(u, factor)
    assert counts[2] == 0, SEED_MSG
    support = probs > 0
    order = np.argsort(-probs[support])
    p_ok = chi2_pvalue(counts[support][order], probs[support][order], n)
    assert p_ok > ALPHA, f"p = {p_ok:.3g}, counts {counts} {SEED_MSG}"


@pytest.mark.slow
def test_mcmc_accept_rate_matches_probability():
    """mcmc_accept_jit with uniform u accepts with probability min(1, exp(εΔs/(2Δ)))."""
    rng = make_rng("mcmc-rate")
    n = 100_000
    for delta, eps, sens in [(-1.0, 1.0, 1.0), (-0.3, 2.0, 2.0), (-5.0, 0.5, 1.0)]:
        p = m.mcmc_accept_probability(delta, eps, sens)
        u = rng.random(n)
        k = sum(m.mcmc_accept_jit(delta, eps, sens, float(x)) for x in u)
        pval = stats.binomtest(int(k), n, p).pvalue
        assert pval > ALPHA, f"accept rate {k / n:.4f} vs {p:.4f} (p = {pval:.3g}) {SEED_MSG}"
