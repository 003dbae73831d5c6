"""The trained-heads demo (notebook 05): the task needs two relations, two heads learn one each,
one head learns only one, and the numbers do not depend on how a right class is written."""

from __future__ import annotations

import pytest
import torch

import attention_course.grading  # noqa: F401
from attention_course.model.manifest import load
from attention_course.model.reference import define, reference
from helpers import trained_heads as th

COURSE = load()
MHA = COURSE.item("MultiHeadAttention")


@pytest.fixture(scope="module")
def two_heads():
    return th.train(reference(COURSE, MHA), num_heads=2)


def test_every_sequence_holds_four_tokens_twice_each():
    seq = th.make_batch(64, torch.Generator().manual_seed(0))
    assert seq.shape == (64, th.LENGTH)
    for row in seq.tolist():
        assert sorted(row.count(t) for t in set(row)) == [2, 2, 2, 2]


def test_ideal_maps_point_at_the_previous_token_and_at_the_other_copy():
    seq = torch.tensor([[3, 1, 1, 3, 7, 2, 7, 2]])
    ideal = th.ideal_maps(seq)[0]
    previous, other = ideal[0], ideal[1]
    assert previous[0].sum() == 0 and all(previous[t, t - 1] == 1 and previous[t].sum() == 1 for t in range(1, 8))
    assert other.argmax(-1).tolist() == [3, 2, 1, 0, 6, 7, 4, 5]
    assert torch.equal(other, other.T) and other.diagonal().sum() == 0
    token_targets, position_targets = th.targets(seq)
    assert token_targets.tolist() == [[-100, 3, 1, 1, 3, 7, 2, 7]]
    assert position_targets.tolist() == [[3, 2, 1, 0, 6, 7, 4, 5]]


def test_distance_is_zero_for_the_ideal_map_and_one_for_a_disjoint_one():
    seq = th.make_batch(8, torch.Generator().manual_seed(1))
    ideal = th.ideal_maps(seq)  # (n, 2, T, T)
    exact = ideal[:, [0, 1]].clone()
    exact[:, 0, 0, 1] = 1.0  # row 0 of "previous" is not defined: ignored
    d = th.distances(exact, ideal)
    assert d[0, 0] == pytest.approx(0) and d[1, 1] == pytest.approx(0)
    uniform = torch.full_like(exact, 1.0 / th.LENGTH)
    assert th.distances(uniform, ideal).min() == pytest.approx(1 - 1 / th.LENGTH)


def test_two_heads_learn_one_relation_each(two_heads):
    assert min(two_heads.accuracy) > 0.95
    assert sorted(two_heads.matched()) == [0, 1], "each relation should be taken by one head"
    for h, r in enumerate(two_heads.matched()):
        assert two_heads.distance[h, r] < 0.05 and two_heads.distance[h, 1 - r] > 0.5
    assert two_heads.source == "your MultiHeadAttention" and two_heads.fallback == ""


def test_one_head_learns_only_one_relation():
    one = th.train(reference(COURSE, MHA), num_heads=1)
    assert max(one.accuracy) > 0.95 and min(one.accuracy) < 0.3


def test_the_heads_change_during_training(two_heads):
    first, last = two_heads.snapshots[0], two_heads.snapshots[th.STEPS]
    assert first.max() < 0.6 < last.max(), "the maps should sharpen from nearly uniform"
    assert two_heads.losses[-1] < 0.1 * two_heads.losses[0]


def test_any_right_class_trains_to_the_same_numbers(two_heads):
    for source in MHA.alternatives:
        other = th.train(define(COURSE, MHA, source), num_heads=2)
        assert th.report(other) == th.report(two_heads)


def test_a_missing_class_falls_back_to_the_built_in_with_one_sentence():
    stub = define(
        COURSE,
        MHA,
        "class MultiHeadAttention(nn.Module):\n    def __init__(self, *a):\n        raise NotImplementedError()\n",
    )
    result = th.train(stub, num_heads=2)
    assert "Implement `MultiHeadAttention`" in result.fallback and "nn.MultiheadAttention" in result.fallback
    assert result.source == "nn.MultiheadAttention" and min(result.accuracy) > 0.95


def test_a_class_returning_wrong_shapes_is_not_trained():
    wrong = define(COURSE, MHA, reference_source_with("return self.W_o(out), weights", "return out, weights.mean(1)"))
    assert th.train(wrong, num_heads=2, steps=1).source == "nn.MultiheadAttention"


def reference_source_with(old: str, new: str) -> str:
    from attention_course.model.reference import answer_source

    source = answer_source(COURSE, MHA)
    assert old in source
    return source.replace(old, new)


def test_training_runs_on_one_thread_and_restores_the_setting():
    before = torch.get_num_threads()
    with th.one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_the_written_out_adam_matches_torch():
    torch.manual_seed(0)
    a, b = torch.randn(5, requires_grad=True), None
    b = a.detach().clone().requires_grad_(True)
    mine, theirs = th.Adam([a], lr=0.1), torch.optim.Adam([b], lr=0.1)
    for _ in range(5):
        for p, opt in ((a, mine), (b, theirs)):
            opt.zero_grad()
            ((p - 1) ** 2 * torch.arange(5.0)).sum().backward()
            opt.step()
    assert torch.allclose(a, b, atol=1e-6)


def test_training_is_small_enough_to_run_in_a_cell(two_heads):
    # Its time is a figure of `make bench` (the notebooks' wall time), not a timed test: here the
    # work is bounded instead, a few hundred steps on a small model.
    from helpers.trained_heads import STEPS

    assert STEPS <= 400 and two_heads.seconds > 0


@pytest.mark.slow
def test_two_heads_specialise_on_at_least_19_of_20_seeds():
    """The rate notebook 05 states: with the reference module, 300 steps, seeds 0-19."""
    different = [
        seed
        for seed in range(20)
        if len(set(th.train(reference(COURSE, MHA), num_heads=2, seed=seed, snapshots=()).matched())) == 2
    ]
    assert len(different) >= 19 and 12 not in different, different  # seed 12 is the notebook's failure case
