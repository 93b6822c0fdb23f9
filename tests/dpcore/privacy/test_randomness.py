"""The random source of a run: ChaCha20 (a CSPRNG) on private data, seeded PCG64 on public
demo data; both pass unchanged through the mechanisms and the numba kernels."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from randomgen import ChaCha

from dpcore.errors import ParameterError
from dpcore.privacy import mechanisms as m
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import Requester, RunPermit, content_digest
from dpcore.privacy.randomness import (
    CSPRNG_ROUNDS,
    is_secure_generator,
    run_generator,
    secure_generator,
)
from dpcore.redescriptions.params import TreeParams
from dpcore.runs import charge_and_mine


def _permit(public_demo: bool, seed):
    return RunPermit(dataset=SimpleNamespace(public_demo=public_demo), params=None, seed=seed,
                     audience="everyone", requester=Requester())


def test_private_permit_draws_from_chacha20():
    rng = _permit(False, None).rng()
    assert is_secure_generator(rng)
    assert isinstance(rng.bit_generator, ChaCha)
    assert rng.bit_generator.state["state"]["rounds"] == CSPRNG_ROUNDS == 20


def test_unseeded_public_demo_run_is_not_weaker():
    assert is_secure_generator(_permit(True, None).rng())


def test_seeded_public_demo_generator_is_reproducible_pcg64():
    a, b = _permit(True, 7).rng(), _permit(True, 7).rng()
    assert isinstance(a.bit_generator, np.random.PCG64) and not is_secure_generator(a)
    np.testing.assert_array_equal(a.integers(0, 2**62, 50), b.integers(0, 2**62, 50))
    assert not np.array_equal(_permit(True, 8).rng().random(8), _permit(True, 7).rng().random(8))


def test_a_seed_on_private_data_is_refused_by_the_one_function():
    with pytest.raises(ParameterError, match="public demo"):
        run_generator(public_demo=False, seed=3)
    for bad in (-1, 1.5, True, "7"):
        with pytest.raises(ParameterError):
            run_generator(public_demo=True, seed=bad)


def test_secure_generators_are_freshly_keyed():
    keys = {tuple(secure_generator().bit_generator.state["state"]["keysetup"]) for _ in range(8)}
    assert len(keys) == 8
    assert len({float(secure_generator().random()) for _ in range(8)}) == 8


def _counter(rng) -> int:
    return int(rng.bit_generator.state["state"]["ctr"][0])


def test_chacha_feeds_the_numba_samplers_unchanged():
    """numba reads the ChaCha bit generator through its ctypes interface: a fixed key gives
    the same draws twice, the Python and numba exponential-mechanism paths agree on it, and
    the state advances in the Python object (one shared stream)."""
    def fixed():
        return np.random.Generator(ChaCha(key=2**255 + 12345, counter=0, rounds=20))

    scores = np.linspace(-5.0, 3.0, 40)
    r1, r2 = fixed(), fixed()
    a = [m.exponential_index(scores, 0.7, r1) for _ in range(50)]
    b = [m.exponential_choice(scores, 1.4, 1.0, r2) for _ in range(50)]
    assert a == b and len(set(a)) > 3
    assert _counter(r1) == _counter(r2) > _counter(fixed())
    assert r1.random() == r2.random()
    noisy = [m.discrete_laplace(np.zeros(20, dtype=np.int64), sensitivity=1, epsilon_nano=10**9,
                                rng=r, accountant=PrivacyAccountant(10**9), label="t")
             for r in (fixed(), fixed())]
    np.testing.assert_array_equal(*noisy)
    assert np.count_nonzero(noisy[0]) > 5
    # ChaCha's doubles are multiples of 2^-53, as the float samplers' bounds assume.
    u = fixed().random(10_000)
    assert np.all(u * 2.0**53 == np.floor(u * 2.0**53))


@pytest.fixture()
def ledger(tmp_path, clinic_dataset):
    led = Ledger(tmp_path / "ledger.sqlite")
    led.register_dataset("clinic", clinic_dataset.schema, str(clinic_dataset_path()), 5.0,
                         actor="owner", confirmed=True,
                         content_digest=content_digest(clinic_dataset))
    private = replace(clinic_dataset.schema, name="private", public_demo=False)
    led.register_dataset("private", private, str(clinic_dataset_path()), 5.0, actor="owner",
                         confirmed=True, content_digest=content_digest(clinic_dataset))
    return led


def clinic_dataset_path():
    return Path(__file__).resolve().parents[3] / "sample_data" / "clinic"


def test_private_run_mines_with_chacha_through_the_numba_kernels(ledger, monkeypatch):
    """A whole MCMC run on private data (numba tree kernels, MCMC acceptance, noisy counts)
    draws from the ChaCha20 generator the policy hands out."""
    handed = []
    original = RunPermit.rng

    def spy(self):
        rng = original(self)
        handed.append(rng)
        return rng

    monkeypatch.setattr(RunPermit, "rng", spy)
    params = TreeParams(algorithm="mcmctreepair", epsilon=0.5, in_tr=2, mc_iter=200)
    result = charge_and_mine(ledger, "private", params)
    assert len(handed) == 1 and is_secure_generator(handed[0])
    assert _counter(handed[0]) > 0, "the kernels consumed the ChaCha stream"
    assert result.redescriptions is not None


def test_public_demo_seeded_run_is_reproducible(ledger):
    params = TreeParams(algorithm="mcmctreepair", epsilon=0.5, in_tr=2, mc_iter=200)
    a = charge_and_mine(ledger, "clinic", params, seed=11)
    b = charge_and_mine(ledger, "clinic", params, seed=11)
    assert a.trees == b.trees
    assert [np.asarray(x.noisy_table).tolist() for x in a.extractions] == \
        [np.asarray(x.noisy_table).tolist() for x in b.extractions]


def test_randomgen_is_loaded_by_the_first_secure_generator_only():
    """A seeded public-demo run never imports randomgen (issue 19: start-up of a command-line
    mine); the first secure generator does, and the ChaCha checks see it from then on."""
    import json
    import subprocess
    import sys

    code = (
        "import json, sys\n"
        "from dpcore.privacy.randomness import (child_generators, is_secure_generator,\n"
        "                                       run_generator)\n"
        "seeded = run_generator(public_demo=True, seed=3)\n"
        "kids = child_generators(seeded, 2)\n"
        "before = ['randomgen' in sys.modules, is_secure_generator(seeded),\n"
        "          any(is_secure_generator(k) for k in kids)]\n"
        "private = run_generator(public_demo=False, seed=None)\n"
        "kids = child_generators(private, 2)\n"
        "after = ['randomgen' in sys.modules, is_secure_generator(private),\n"
        "         all(is_secure_generator(k) for k in kids),\n"
        "         type(kids[0].bit_generator).__name__]\n"
        "print(json.dumps([before, after]))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[3],
                         capture_output=True, text=True, check=True).stdout
    before, after = json.loads(out.strip().splitlines()[-1])
    assert before == [False, False, False]
    assert after == [True, True, True, "ChaCha"]
