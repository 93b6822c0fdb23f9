"""Exact checks of the discrete samplers of ``dpcore.privacy.mechanisms`` on small domains
(docs/PRIVACY.md §9 and §13): the probabilities are computed, not sampled.

* Bernoulli(exp(−γ)) (CKS20 Algorithm 1, ``_bernoulli_exp_unit_py`` / ``_bernoulli_exp_py``):
  every path of uniform integers the code can take is enumerated with its exact probability
  (a product of 1/n, as ``Fraction``) down to paths of probability 2⁻⁴⁰; P(True) must be
  exp(−γ) within the mass left unexplored (below 3·10⁻⁹).
* Discrete Laplace (CKS20 Algorithm 2, ``_discrete_laplace_py``): every path is enumerated,
  each uniform integer branching over its range and each Bernoulli call branching over its
  two outcomes with the probabilities found above (scale 1: until 10⁻¹¹ of the mass is
  left; scales 2 and 1/2: 3·10⁻⁴, the enumeration grows exponentially with the rejections).
  Every integer k in a window gets (1 − a)/(1 + a)·a^|k|, a = e^(−s/t), within the mass left
  unexplored, and P(k)/P(k + 1) ≤ e^(s/t) for the sound bounds: the claimed ε/Δ.
  The numba sampler ``discrete_laplace`` uses draws exactly the Python one's numbers on the
  same stream, at the scale Δ/ε computed here as a fraction, so the check covers it.
* The exponential mechanism's float inversion (``exponential_index``): its exact output
  distribution (counting the 2⁵³ uniforms that pick each candidate) on small utility vectors
  and their neighbours (every utility moved by at most Δ) has privacy loss ≤ ε beyond the
  stated TV bound (4n + 2)·2⁻⁵³, and ``exponential_choice`` draws exactly the inversion at
  ε/(2Δ) on the same stream.

Each check is a fixture-free function, so ``tests/dpcore/privacy/test_privacy_mutants.py``
reruns them under the planted bugs of the sampling cores.
"""

from __future__ import annotations

import contextlib
import math
from fractions import Fraction

import numpy as np

from dpcore.privacy import mechanisms as m
from dpcore.privacy.accountant import PrivacyAccountant
from tests.dpcore.privacy.test_mechanisms import _GRID, _exact_em_probabilities, _float_em_counts
from tests.support import reference as R

MSG = R.SEED_MSG


class _Need(Exception):
    """A path reached a draw the script does not cover yet: branch on its ``n`` outcomes."""

    def __init__(self, n: int, weights=None):
        self.n, self.weights = n, weights


class _Scripted:
    """Replays one path: ``integers(lo, hi)`` returns the next scripted offset."""

    def __init__(self, path: tuple):
        self.path, self.i = path, 0

    def next(self, n: int, weights=None) -> int:
        if self.i == len(self.path):
            raise _Need(n, weights)
        value = self.path[self.i]
        self.i += 1
        return value

    def integers(self, low, high):
        return int(low) + self.next(int(high) - int(low))


def enumerate_paths(sample, cutoff: Fraction) -> tuple[dict, Fraction]:
    """Exact law of ``sample(scripted)`` over every path of probability ≥ ``cutoff``.

    Returns (outcome → probability as Fraction, unexplored mass)."""
    law: dict = {}
    unexplored = Fraction(0)
    stack = [((), Fraction(1))]
    while stack:
        path, p = stack.pop()
        try:
            out = sample(_Scripted(path))
        except _Need as need:
            if p / need.n < cutoff:
                unexplored += p
            else:
                stack.extend((path + (v,), p / need.n) for v in range(need.n))
            continue
        law[out] = law.get(out, 0) + p
    return law, unexplored


_BERNOULLI_CUTOFF = Fraction(1, 2**40)


def bernoulli_true(num: int, den: int) -> tuple[Fraction, Fraction]:
    """Exact P(``_bernoulli_exp_py(num, den)`` is True), as (enumerated, unexplored mass)."""
    law, rest = enumerate_paths(lambda rng: m._bernoulli_exp_py(num, den, rng),
                                _BERNOULLI_CUTOFF)
    return law.get(True, Fraction(0)), rest


def check_bernoulli_exp_exact() -> None:
    for num, den in [(0, 1), (1, 1), (1, 2), (1, 4), (3, 1)]:
        p, rest = bernoulli_true(num, den)
        target = math.exp(-num / den)
        assert float(p) - 1e-15 <= target <= float(p + rest) + 1e-15, (
            f"Bernoulli(exp(−{num}/{den})): P(True) ∈ [{float(p)}, {float(p + rest)}], "
            f"not {target}")


def discrete_laplace_law(s: int, t: int, cutoff: float = 1e-11) -> tuple[dict, float]:
    """The exact law of ``_discrete_laplace_py(s, t)``: uniform integers branch over their
    range, each Bernoulli(exp(−u/t)) call over its two outcomes with its exact probability
    (:func:`bernoulli_true`). Floats: the branch probabilities are irrational (10⁻¹⁵)."""
    # every Bernoulli the sampler can ask for, computed before the stand-in replaces them:
    # Bernoulli(exp(−u/t)) for each u < t, and Bernoulli(exp(−1))
    cache = {(u, t): float(bernoulli_true(u, t)[0]) for u in range(t)}
    cache[(1, 1)] = float(bernoulli_true(1, 1)[0])

    def p_true(num, den):
        return cache[(num, den)]

    law: dict = {}
    unexplored = 0.0
    stack = [((), 1.0)]
    while stack:
        path, p = stack.pop()
        script = _Scripted(path)

        def bernoulli(num, den, rng, _script=script):
            pt = p_true(int(num), int(den))
            return _script.next(2, (pt, 1.0 - pt)) == 0

        try:
            with _patched_bernoulli(bernoulli):
                out = m._discrete_laplace_py(s, t, script)
        except _Need as need:
            weights = need.weights or [1.0 / need.n] * need.n
            for v, w in enumerate(weights):
                if p * w < cutoff:
                    unexplored += p * w
                else:
                    stack.append((path + (v,), p * w))
            continue
        law[out] = law.get(out, 0.0) + p
    return law, unexplored


@contextlib.contextmanager
def _patched_bernoulli(stand_in):
    saved = m._bernoulli_exp_py, m._bernoulli_exp_unit_py
    m._bernoulli_exp_py = m._bernoulli_exp_unit_py = stand_in
    try:
        yield
    finally:
        m._bernoulli_exp_py, m._bernoulli_exp_unit_py = saved


def check_discrete_laplace_exact() -> None:
    # (s, t, how much mass may stay unexplored): the enumeration is exponential in the
    # number of rejections, so the coarser scales stop earlier; the bounds below are sound
    # for any unexplored mass (an outcome's probability lies in [found, found + rest]).
    for s, t, cutoff in [(1, 1, 1e-12), (1, 2, 1e-7), (2, 1, 1e-7)]:
        law, rest = discrete_laplace_law(s, t, cutoff)
        a = math.exp(-s / t)
        assert rest < 1e-3, f"s/t = {s}/{t}: {rest} of the mass unexplored"
        for k in range(-6, 7):
            exact = (1 - a) / (1 + a) * a ** abs(k)
            got = law.get(k, 0.0)
            assert got - 1e-9 <= exact <= got + rest + 1e-9, (
                f"discrete Laplace s/t = {s}/{t}: P({k}) ∈ [{got!r}, {got + rest!r}], not "
                f"{exact!r}")
        for k in range(-5, 5):
            lo, hi = law.get(k, 0.0), law.get(k + 1, 0.0)
            assert lo <= math.exp(s / t) * (hi + rest) * (1 + 1e-9) and \
                hi <= math.exp(s / t) * (lo + rest) * (1 + 1e-9), (
                f"s/t = {s}/{t}: P({k}) = {lo}, P({k + 1}) = {hi}: loss above ε/Δ = {s / t}")
    # the numba sampler and discrete_laplace draw the Python sampler's numbers, at Δ/ε
    for delta, eps_nano in [(1, 10**9), (2, 10**9), (3, 5 * 10**8), (1, 3 * 10**9)]:
        f = Fraction(eps_nano, delta * 10**9)
        seed = R.BASE_SEED + delta
        out = m.discrete_laplace(np.zeros(40, dtype=np.int64), sensitivity=delta,
                                 epsilon_nano=eps_nano, rng=np.random.default_rng(seed),
                                 accountant=PrivacyAccountant(eps_nano), label="exact")
        ref_rng = np.random.default_rng(seed)
        ref = [m._discrete_laplace_py(f.numerator, f.denominator, ref_rng) for _ in range(40)]
        assert list(out) == ref, f"Δ = {delta}, ε = {eps_nano}e-9: {list(out)} vs {ref} {MSG}"
        sample = m.discrete_laplace_sample(f.numerator, f.denominator,
                                           np.random.default_rng(seed), 40)
        assert list(sample) == ref, f"discrete_laplace_sample at {f}: {MSG}"


def test_bernoulli_exp_probabilities_are_exact():
    check_bernoulli_exp_exact()


def test_discrete_laplace_probabilities_are_exact_and_within_its_epsilon():
    check_discrete_laplace_exact()


def test_path_enumeration_sees_a_sampler_at_half_scale():
    """Power: the law of the sampler asked for s/t = 2/1 is not the law at 1/1."""
    law, _ = discrete_laplace_law(2, 1, 1e-7)
    a = math.exp(-1.0)
    assert abs(law[0] - (1 - a) / (1 + a)) > 0.1


# ---------------------------------------------------------------- the exponential mechanism

_UTILITIES = [
    (np.array([0.0, 1.0, 3.0, 2.0]), 1.0, 2.0),
    (np.array([5.0, -1.0, 0.5, 5.0, 2.5, -np.inf]), 0.5, 1.0),
    (np.array([10.0, 0.0]), 2.0, 3.0),
]


def _neighbours(u: np.ndarray, delta: float):
    """Utility vectors with every finite utility moved by −Δ, 0 or +Δ (one pattern each)."""
    finite = np.isfinite(u)
    for pattern in ([1], [-1], [1, -1], [-1, 1], [1, 0, -1]):
        shift = np.resize(np.array(pattern, dtype=float), u.size) * delta
        yield np.where(finite, u + shift, u)


def check_exponential_exact() -> None:
    for u, eps, delta in _UTILITIES:
        factor = eps / (2 * delta)
        n = u.size
        slack = (4 * n + 2) * 2.0**-53
        p = [c / _GRID for c in _float_em_counts(u, factor)]
        exact = [float(x) for x in _exact_em_probabilities(list(map(float, u)), factor)]
        assert sum(abs(a - b) for a, b in zip(p, exact)) / 2 <= slack
        for v in _neighbours(u, delta):
            q = [c / _GRID for c in _float_em_counts(v, factor)]
            for i in range(n):
                if p[i] > 0:
                    assert p[i] <= math.exp(eps) * q[i] + 2 * slack, (
                        f"candidate {i}: P = {p[i]} > e^ε·P′ = {math.exp(eps) * q[i]}")
        # exponential_choice draws the inversion at ε/(2Δ) from one uniform of the stream
        rng, ref = np.random.default_rng(R.BASE_SEED), np.random.default_rng(R.BASE_SEED)
        cum = np.cumsum([math.exp((x - np.max(u)) * factor) if np.isfinite(x) else 0.0
                         for x in u])
        for _ in range(200):
            got = m.exponential_choice(u, eps, delta, rng)
            target = ref.random() * cum[-1]
            assert got == int(np.argmax(cum > target)), (
                f"exponential_choice({u}, ε = {eps}, Δ = {delta}) is not the inversion at "
                f"ε/(2Δ) {MSG}")


def test_exponential_mechanism_probabilities_are_within_its_epsilon():
    check_exponential_exact()


DETECTORS = [check_bernoulli_exp_exact, check_discrete_laplace_exact, check_exponential_exact]
