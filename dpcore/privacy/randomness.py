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

Privacy: the DP arguments of docs/PRIVACY.md assume ideal randomness; with ChaCha20
they hold against any adversary that cannot break ChaCha20 (computational DP), and
the exact samplers' distributions hold for exactly uniform integers
(docs/PRIVACY.md, "Numerics of each sampler").
"""

from __future__ import annotations

import numbers
import secrets

import numpy as np
from randomgen import ChaCha

from dpcore.errors import ParameterError

__all__ = ["CSPRNG_ROUNDS", "CSPRNG_KEY_BITS", "run_generator", "secure_generator",
           "is_secure_generator"]

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
    bit_generator = ChaCha(key=secrets.randbits(CSPRNG_KEY_BITS), counter=0,
                           rounds=CSPRNG_ROUNDS)
    return np.random.Generator(bit_generator)


def is_secure_generator(rng) -> bool:
    """Whether ``rng`` is a Generator over ChaCha with :data:`CSPRNG_ROUNDS` rounds."""
    if not isinstance(rng, np.random.Generator):
        return False
    bit_generator = rng.bit_generator
    return isinstance(bit_generator, ChaCha) and \
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
