"""dpcore.redescriptions.warmup: the tiny dataset and the smallest runs that compile every
kernel (the session fixture ``compiled_kernels`` calls :func:`warm_kernels`)."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.redescriptions.params import plan_budget
from dpcore.redescriptions.warmup import INTERVALS_KEY, tiny_dataset, warm_kernels, warmup_params
from dpcore.registry import ALGORITHMS, MODES, STRICT


def test_tiny_dataset_is_seeded_public_and_has_every_attribute_type():
    a, b = tiny_dataset(), tiny_dataset()
    assert all(np.array_equal(x.values, y.values) for x, y in zip(a.views, b.views, strict=True))
    assert a.n_rows == 120 and a.schema.public_demo
    types = {attr.type for attr in a.schema.attributes}
    assert types == {"boolean", "categorical", "numeric"}
    assert {attr.view for attr in a.schema.attributes} == {0, 1}
    assert not np.array_equal(tiny_dataset(seed=1).views[0].values, a.views[0].values)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_warmup_params_are_valid_and_small(algorithm, mode):
    params = warmup_params(algorithm, mode)
    assert params.algorithm == algorithm and params.mode == mode
    charged = sum(s.epsilon_nano for s in plan_budget(params))
    # ε = 1: exactly in strict mode; faithful extraction is charged its true, larger cost
    assert charged == 10**9 if mode == STRICT else charged >= 10**9
    if params.is_serenade:          # its own type: no trees, one pair, one round
        assert params.init_pairs == params.es_rounds == params.cs_rounds == 1
    else:
        assert params.in_tr == 1 and params.depth == 2 and params.mc_iter <= 50


def test_warm_kernels_times_every_algorithm_and_mode(compiled_kernels):
    assert set(compiled_kernels) == {f"{a}/{m}" for m in MODES
                                     for a in ALGORITHMS} | {INTERVALS_KEY}
    again = warm_kernels()                          # compiled now: every run is quick
    assert set(again) == set(compiled_kernels) and all(t >= 0 for t in again.values())
    assert sum(again.values()) < 60.0
