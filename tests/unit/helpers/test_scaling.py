"""`helpers.scaling`, the experiments behind 01's argument, on small sizes with fixed seeds: reproducible
unit-normal draws; the variance of q.k grows like d_k and dividing by sqrt(d_k) brings it back to 1 (exactly
the raw variance over d_k); nn.Linear's default initialisation leaves a third of the variance, without
touching the global random state; the softmax's weights and the gradients autograd finds agree with the
formulas (so scaling divides them as it should); sharpness grows with d_k unscaled and not scaled; and the
table's shape and its cleared cache. (tests/unit/helpers/test_demos.py checks the notebook's large sizes.)
"""

from __future__ import annotations

import math

import pytest
import torch

from helpers import scaling

TRIALS = 300


def test_unit_normal_is_reproducible_from_its_seed_and_unit_normal():
    a, b = scaling.unit_normal(3, 4, seed=7), scaling.unit_normal(3, 4, seed=7)
    assert a.shape == (3, 4) and torch.equal(a, b)
    assert not torch.equal(a, scaling.unit_normal(3, 4, seed=8))
    big = scaling.unit_normal(200, 100, seed=0)
    assert abs(big.mean().item()) < 0.02 and big.var().item() == pytest.approx(1.0, abs=0.03)


def test_unit_normal_leaves_the_global_random_state_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    scaling.unit_normal(10, seed=1)
    assert torch.equal(torch.rand(3), expected)


def test_the_variance_of_q_dot_k_grows_with_d_k_and_scaling_undoes_it():
    rows = scaling.score_variance([2, 8, 32, 128], samples=4000, seed=3)
    assert [r["d_k"] for r in rows] == [2, 8, 32, 128]
    raw = [r["var_raw"] for r in rows]
    assert raw == sorted(raw) and raw[-1] > 30 * raw[0]
    for row in rows:
        assert row["var_raw"] == pytest.approx(row["d_k"], rel=0.15)
        assert row["var_scaled"] == pytest.approx(1.0, rel=0.15)
        assert row["var_scaled"] == pytest.approx(row["var_raw"] / row["d_k"], rel=1e-4)


def test_score_variance_is_the_same_for_the_same_seed_only():
    first = scaling.score_variance([16], samples=500, seed=1)
    assert scaling.score_variance([16], samples=500, seed=1) == first
    assert scaling.score_variance([16], samples=500, seed=2) != first


def test_a_default_linear_layer_keeps_a_third_of_the_variance_and_the_global_random_state():
    torch.manual_seed(11)
    expected = torch.rand(2)
    torch.manual_seed(11)
    variance = scaling.linear_output_variance(d=128, samples=2000, seed=0)
    assert torch.equal(torch.rand(2), expected)  # forked: the notebook's own draws do not move
    assert variance == pytest.approx(1 / 3, abs=0.04)
    assert scaling.linear_output_variance(d=128, samples=2000, seed=0) == variance


def test_softmax_weights_are_distributions_over_the_keys():
    g = scaling.softmax_gradients(16, scaled=True, n_keys=6, trials=TRIALS, seed=4)
    assert g["weights"].shape == (TRIALS, 6) and g["scores"].shape == (TRIALS, 6)
    assert torch.allclose(g["weights"].sum(-1), torch.ones(TRIALS)) and bool((g["weights"] >= 0).all())
    assert torch.allclose(g["weights"], torch.softmax(g["scores"], dim=-1))
    assert g["score_grad"].shape == (TRIALS,) and g["query_grad"].shape == (TRIALS,)


def test_the_gradients_are_the_softmax_jacobian_applied_to_the_read_out():
    d_k, n_keys, seed = 32, 5, 9
    q, k, readout = (t.double() for t in scaling._gradient_draw(d_k, n_keys, TRIALS, seed))
    for scaled in (False, True):
        g = scaling.softmax_gradients(d_k, scaled, n_keys=n_keys, trials=TRIALS, seed=seed)
        scale = math.sqrt(d_k) if scaled else 1.0
        scores = (q @ k.transpose(-2, -1)).squeeze(1) / scale
        w = torch.softmax(scores, dim=-1)
        d_scores = w * (readout - (w * readout).sum(-1, keepdim=True))  # d(sum w*r)/d(scores)
        d_query = (d_scores.unsqueeze(1) @ k).squeeze(1) / scale
        assert torch.allclose(g["scores"].double(), scores, rtol=1e-4, atol=1e-4)
        assert torch.allclose(g["score_grad"].double(), d_scores.norm(dim=-1), rtol=1e-3, atol=1e-5)  # float32 rounding
        assert torch.allclose(g["query_grad"].double(), d_query.norm(dim=-1), rtol=1e-3, atol=1e-5)  # float32 rounding


def test_scaled_scores_are_the_raw_ones_over_sqrt_d_k_on_the_same_draw():
    raw = scaling.softmax_gradients(64, scaled=False, trials=TRIALS, seed=2)
    scaled = scaling.softmax_gradients(64, scaled=True, trials=TRIALS, seed=2)
    assert torch.allclose(scaled["scores"], raw["scores"] / 8, atol=1e-5)


def test_repeated_calls_give_the_same_gradients():
    first = scaling.softmax_gradients(8, scaled=False, trials=TRIALS, seed=6)
    again = scaling.softmax_gradients(8, scaled=False, trials=TRIALS, seed=6)  # the cached draw, not grown
    for key in ("weights", "score_grad", "query_grad"):
        assert torch.equal(first[key], again[key]), key


def test_at_d_k_one_scaling_changes_nothing():
    raw = scaling.softmax_sharpness(1, scaled=False, trials=TRIALS, seed=0)
    scaled = scaling.softmax_sharpness(1, scaled=True, trials=TRIALS, seed=0)
    assert {k: v for k, v in raw.items() if k != "scaled"} == {k: v for k, v in scaled.items() if k != "scaled"}


def test_without_scaling_the_softmax_sharpens_and_its_gradient_fades_as_d_k_grows():
    rows = [scaling.softmax_sharpness(d_k, scaled=False, trials=TRIALS, seed=1) for d_k in (1, 16, 256)]
    assert [r["max_weight"] for r in rows] == sorted(r["max_weight"] for r in rows)
    assert [r["entropy_bits"] for r in rows] == sorted((r["entropy_bits"] for r in rows), reverse=True)
    assert rows[-1]["grad_small"] > rows[0]["grad_small"]
    assert rows[-1]["score_std"] == pytest.approx(16, rel=0.15)
    for r in rows:
        assert 1 / 8 <= r["max_weight"] <= 1 and 0 <= r["entropy_bits"] <= math.log2(8) + 1e-6
        assert 0 <= r["grad_small"] <= 1 and r["grad_median"] <= r["grad_norm"] * 3


def test_with_scaling_the_spread_of_the_scores_stays_near_one():
    for d_k in (4, 64, 256):
        row = scaling.softmax_sharpness(d_k, scaled=True, trials=TRIALS, seed=1)
        assert row["score_std"] == pytest.approx(1.0, rel=0.15), d_k
        assert 0.2 < row["max_weight"] < 0.6


def test_the_sharpness_table_has_a_raw_and_a_scaled_column_per_measure_and_frees_its_draw():
    rows = scaling.sharpness_table([4, 16], n_keys=4, trials=100, seed=0)
    assert [r["d_k"] for r in rows] == [4, 16]
    expected = {"d_k"} | {f"{key}_{kind}" for key in scaling.SHARPNESS_KEYS for kind in ("raw", "scaled")}
    assert all(set(r) == expected for r in rows)
    assert rows[1]["max_weight_raw"] == scaling.softmax_sharpness(16, False, n_keys=4, trials=100)["max_weight"]
    assert rows[1]["max_weight_scaled"] == scaling.softmax_sharpness(16, True, n_keys=4, trials=100)["max_weight"]
    scaling.sharpness_table([4], n_keys=4, trials=100)
    assert scaling._gradient_draw.cache_info().currsize == 0
