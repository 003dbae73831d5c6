"""The num_heads lab computes what it claims for each slider value, from the student's code."""

from __future__ import annotations

import pytest
import torch

import attention_course.grading  # noqa: F401
from attention_course.model.manifest import load
from attention_course.model.reference import reference as solution_of
from helpers import relations_task as task
from helpers.heads_lab import HeadsLab, MissingImplementation, accuracies, divisors, heads_numbers, mosaic

COURSE = load()


def reference(name: str):
    """The instructor's solution of an exercise, from its source notebook."""
    return solution_of(COURSE, COURSE.item(name))


def test_divisors_are_the_only_head_counts():
    assert divisors(12) == [1, 2, 3, 4, 6, 12]
    with pytest.raises(ValueError, match="choose one of"):
        heads_numbers(5, 12, split_heads=lambda x, h: x)
    with pytest.raises(ValueError, match="choose one of"):
        heads_numbers(4, 16, split_heads=lambda x, h: x)  # only d_model = 12 was trained


def test_each_head_gets_a_contiguous_slice_and_the_parameter_count_never_changes():
    counts = set()
    for h in divisors(12):
        n = heads_numbers(h, 12, split_heads=reference("split_heads"))
        assert n.d_head == 12 // h and n.owner == [f // n.d_head for f in range(12)]
        assert n.weights.shape == (h, 8, 8) and torch.allclose(n.weights.sum(-1), torch.ones(h, 8))
        assert n.weights.diagonal(dim1=-2, dim2=-1).eq(0).all(), "no position attends to itself"
        counts.add(n.parameters)
    assert counts == {4 * (12 * 12 + 12)}


def test_the_student_module_gives_the_same_maps_as_split_heads():
    for h in (1, 3, 12):
        by_module = heads_numbers(h, 12, mha_class=reference("MultiHeadAttention"))
        by_split = heads_numbers(h, 12, split_heads=reference("split_heads"))
        assert by_module.parameters == by_split.parameters
        assert torch.allclose(by_module.weights, by_split.weights, atol=1e-5)


def test_too_few_heads_miss_a_relation_and_too_narrow_heads_lose_accuracy():
    """What notebook 03 says the slider shows, on the stored weights."""
    acc = accuracies()
    assert sorted(acc) == divisors(12)
    for h in (1, 2):
        assert min(acc[h]) < 0.5 and max(acc[h]) > 0.95, (h, acc[h])  # some relation held, one missed
    for h in (3, 4, 6):
        assert min(acc[h]) > 0.99, (h, acc[h])  # every relation held
    assert max(acc[12]) < 0.8 and sum(acc[12]) < sum(acc[3]) - 1, acc[12]  # d_head = 1: all fall


def test_three_heads_take_one_relation_each_on_the_probe():
    n = heads_numbers(3, 12, split_heads=reference("split_heads"))
    assert sorted(n.shares.argmax(-1).tolist()) == [0, 1, 2]
    assert n.shares.max(-1).values.min() > 0.8, n.shares


def test_the_relations_of_a_sequence():
    seq = torch.tensor([[3, 1, 1, 3, 7, 2, 7, 2]])
    previous, following, other = task.targets(seq)[0].tolist()
    assert previous == [-100, 3, 1, 1, 3, 7, 2, 7] and following == [1, 1, 3, 7, 2, 7, 2, -100]
    assert other == [3, 2, 1, 0, 6, 7, 4, 5]
    for row in task.make_batch(32, torch.Generator().manual_seed(0)).tolist():
        assert sorted(row.count(t) for t in set(row)) == [2, 2, 2, 2]


def test_an_interleaved_split_shows_in_the_feature_strip():
    def interleaved(x, num_heads):
        b, t, d = x.shape
        return x.view(b, t, d // num_heads, num_heads).permute(0, 3, 1, 2)

    n = heads_numbers(3, 12, split_heads=interleaved)
    assert n.owner == [f % 3 for f in range(12)]


def test_missing_work_gives_one_sentence():
    def stub(*args):
        raise NotImplementedError()

    with pytest.raises(MissingImplementation, match="Implement `split_heads`"):
        heads_numbers(3, 12, split_heads=stub)
    lab = HeadsLab(split_heads=stub)
    assert "Implement `split_heads`" in lab.readout.value


def test_moving_the_slider_changes_the_readout_and_the_drawing():
    def split(x, num_heads):
        b, t, d = x.shape
        return x.reshape(b, t, num_heads, d // num_heads).transpose(1, 2)

    lab = HeadsLab(split_heads=split, num_heads=3)
    before = (lab.readout.value, lab.image.value)
    lab.slider.value = 6
    assert lab.readout.value != before[0] and lab.image.value != before[1]
    assert lab.readout.value.startswith("6 heads × d_head = 2") and "accuracy: previous 1.00" in lab.readout.value
    assert bytes(lab.chart.value).startswith(b"\x89PNG"), "the accuracy chart is drawn once, beside the maps"


def test_mosaic_puts_heads_side_by_side_with_gaps():
    m = mosaic(torch.ones(3, 2, 2))
    assert m.shape == (2, 8) and torch.isnan(m[:, 2]).all() and m[:, 3].eq(1).all()
