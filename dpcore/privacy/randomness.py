"""The random source of a run: a CSPRNG for private data, a seeded PCG64 for public demo data.

Every DP mechanism draws from the ``np.random.Generator`` it is given
(:mod:`dpcore.privacy.mechanisms`), and every run gets its generator from
:func:`run_generator`, the one place that chooses it:

* **No seed** (always the case on private data, which the policy never lets take a
  seed): a :class:`numpy.random.Generator` over the ChaCha stream cipher with 20
  rounds (``randomgen.ChaCha``), keyed with 256 bits from the operating system's
  CSPRNG (:mod:`secrets`), fresh for every run and never stored. ChaCha20 is a
  cryptographically secure generator: its output cannot be predicted, nor its key
  recovered, from earlier output, unlike NumPy's PCG64 whose state follows from a few
  outputs. It is constant-time (no table look-ups), so it does not depend on AES
  hardware instructions the way an AES-counter generator does.
* **A seed** (public demo data and tests only): NumPy's ``default_rng(seed)``
  (PCG64), reproducible across runs and machines.

Both are ordinary ``np.random.Generator`` objects: the mechanisms and the numba
kernels take either unchanged (numba reads the bit generator through its ``ctypes``
interface), and the draws stay in the same order, so a seeded public-demo run and a
private run execute the same code.

A run whose independent parts (the tree miners' trials) run in parallel threads gives
each part its own stream with :func:`child_generators`, derived from the run's
generator so that the split keeps both properties: children of a ChaCha20 run
generator are ChaCha20 generators keyed from its output, children of a seeded PCG64
generator are PCG64 generators spawned from its seed sequence (reproducible, and
independent of how many threads run them).

Privacy: the DP arguments of docs/PRIVACY.md assume ideal randomness; with ChaCha20
they hold against any adversary that cannot break ChaCha20 (computational DP), and
the exact samplers' distributions hold for exactly uniform integers
(docs/PRIVACY.md, "Numerics of each sampler").

``randomgen`` is imported by the first :func:`secure_generator` call, not with this module:
a seeded public-demo run never needs it (≈ 20 ms of a command-line ``mine``, issue 19).
Whether a generator is ChaCha is read without importing it: no ChaCha object exists in a
process that has not imported ``randomgen``.
"""

from __future__ import annotations

import numbers
import secrets
import sys

import numpy as np

from dpcore.errors import ParameterError

__all__ = ["CSPRNG_ROUNDS", "CSPRNG_KEY_BITS", "run_generator", "secure_generator",
           "is_secure_generator", "child_generators"]

#: ChaCha rounds of the private-data generator: the standard ChaCha20.
CSPRNG_ROUNDS = 20
#: Key size of the private-data generator, in bits (ChaCha's full 256-bit key).
CSPRNG_KEY_BITS = 256


def secure_generator() -> np.random.Generator:
    """A fresh ChaCha20 generator keyed with 256 bits from :func:`secrets.randbits`.

    Returns
    -------
    numpy.random.Generator
        Over ``randomgen.ChaCha(key=..., counter=0, rounds=20)``. The key is never
        stored or returned by this module.
    """
    from randomgen import ChaCha  # lazy: seeded public-demo runs never load randomgen

    bit_generator = ChaCha(key=secrets.randbits(CSPRNG_KEY_BITS), counter=0,
                           rounds=CSPRNG_ROUNDS)
    return np.random.Generator(bit_generator)


def _is_chacha(bit_generator) -> bool:
    """Whether ``bit_generator`` is a ``randomgen.ChaCha``, without importing randomgen
    (if it is not imported, no ChaCha object can exist)."""
    randomgen = sys.modules.get("randomgen")
    return randomgen is not None and isinstance(bit_generator, randomgen.ChaCha)


def is_secure_generator(rng) -> bool:
    """Whether ``rng`` is a Generator over ChaCha with :data:`CSPRNG_ROUNDS` rounds."""
    if not isinstance(rng, np.random.Generator):
        return False
    bit_generator = rng.bit_generator
    return _is_chacha(bit_generator) and \
        int(bit_generator.state["state"]["rounds"]) == CSPRNG_ROUNDS


def run_generator(*, public_demo: bool, seed: int | None) -> np.random.Generator:
    """The generator of one run: seeded PCG64 for public demo data, ChaCha20 otherwise.

    Parameters
    ----------
    public_demo : bool
        Whether the dataset is registered as public demo data.
    seed : int or None
        A non-negative int only on public demo data (the policy refuses seeds on
        private data before anything is charged); None for a fresh secure generator.

    Returns
    -------
    numpy.random.Generator
        ``np.random.default_rng(seed)`` when a seed is given, else
        :func:`secure_generator` (on public demo data too: an unseeded run never uses
        a weaker source).

    Raises
    ------
    ParameterError
        A seed on non-public data, or a seed that is not a non-negative int.
    """
    if seed is None:
        return secure_generator()
    if public_demo is not True:
        raise ParameterError("a fixed seed is accepted only on public demo data; private "
                             "data always draws from a fresh secure generator")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ParameterError(f"seed must be a non-negative int; got {seed!r}")
    return np.random.default_rng(int(seed))


def child_generators(rng: np.random.Generator, n: int) -> list[np.random.Generator]:
    """``n`` independent child streams of a run's generator, one per independent part.

    Parameters
    ----------
    rng : numpy.random.Generator
        The run's generator (:func:`run_generator`).
    n : int
        Number of children (≥ 0).

    Returns
    -------
    list of numpy.random.Generator
        * ``rng`` over ChaCha (the private-data source): each child is
          ``ChaCha(key=k, counter=0, rounds=<the parent's>)`` with a 256-bit key ``k`` read
          from the parent's own output (four 64-bit words per child, in child order). The
          keys are ChaCha20 output, so they are as unpredictable as the parent's stream to
          anyone without its key; they are never stored. Every child is therefore
          :func:`is_secure_generator` when the parent is. A ChaCha generator's own
          ``seed_seq`` is *not* used: it is unrelated to its key.
        * any other generator with a :class:`numpy.random.SeedSequence` (a seeded
          ``default_rng(seed)``, PCG64): ``rng.spawn(n)``, children of the same bit
          generator type from the spawned seed sequences; a seeded run's children are the
          same on every machine and for any number of threads.
        * otherwise: PCG64 generators seeded with four 64-bit words of the parent's
          output each.

        Calling this advances the parent (ChaCha, fallback) or its seed sequence's spawn
        counter (PCG64), so two calls give different children; a run calls it once.

    Raises
    ------
    ParameterError
        ``n`` is not a non-negative int.
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ParameterError(f"the number of child streams must be a non-negative int; "
                             f"got {n!r}")
    n = int(n)
    bit_generator = rng.bit_generator
    if _is_chacha(bit_generator):
        from randomgen import ChaCha  # imported already: the parent is one

        rounds = int(bit_generator.state["state"]["rounds"])
        words = bit_generator.random_raw(4 * n).astype(np.uint64).reshape(n, 4)
        return [np.random.Generator(ChaCha(key=int.from_bytes(w.astype("<u8").tobytes(),
                                                              "little"),
                                           counter=0, rounds=rounds))
                for w in words]
    if isinstance(getattr(bit_generator, "seed_seq", None), np.random.SeedSequence):
        return rng.spawn(n)
    words = bit_generator.random_raw(4 * n).astype(np.uint64).reshape(n, 4)
    return [np.random.default_rng(w) for w in words]
