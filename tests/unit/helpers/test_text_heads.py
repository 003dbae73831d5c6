"""The real-text heads of notebook 04: the measures mean what they say, and the stored model's
heads are what the notebook names them, by the numbers it prints."""

from __future__ import annotations

import pytest
import torch

from helpers import head_measures, text_corpus, text_heads, tiny_models


def test_each_measure_points_at_its_key():
    text = 'a "bc" de'
    previous, itself, word_start, space, opener = head_measures.targets(text)
    assert previous[:3] == [None, 0, 1] and itself == list(range(len(text)))
    assert word_start == [None] * 8 + [None]  # no query is two past its word's start
    text = 'xy "abcd" (fgh'
    previous, itself, word_start, space, opener = head_measures.targets(text)
    assert word_start[6] == 4 and word_start[5] is None and word_start[13] == 11
    assert space[5] == 2 and space[12] == 9 and space[3] is None
    assert opener[5] == 3 and opener[9] is None and opener[13] == 10  # the quote closed at 8


def test_a_head_that_does_exactly_one_thing_scores_one_on_it():
    text = "the cat sat on the mat"
    T = len(text)
    previous = torch.zeros(1, T, T)
    previous[0, 0, 0] = 1
    previous[0, torch.arange(1, T), torch.arange(T - 1)] = 1
    s = head_measures.shares(previous, text)[0]
    assert s[0] == 1 and s[1] == pytest.approx(1 / T)  # only query 0 looks at itself
    assert head_measures.chance(text)[0, 1] == pytest.approx(sum(1 / (t + 1) for t in range(T)) / T)
    assert head_measures.strongest(s[None], head_measures.chance(text)[0]) == [0]


def test_the_probe_sentences_are_held_out_prose_that_fits_the_model():
    sentences = text_corpus.probe_sentences()
    assert len(sentences) == 3
    for s in sentences:
        assert len(s) <= tiny_models.TextModel().context and s in text_corpus.held_out_text().replace("\n", " ")
        assert s not in text_corpus.training_text().replace("\n", " ")


def test_every_head_beats_an_even_spread_on_the_measure_it_is_named_by():
    table, even = text_heads.measured(), text_heads.chance()
    for layer in range(table.shape[0]):
        for h, m in enumerate(head_measures.strongest(table[layer], even)):
            assert table[layer, h, m] > 3 * even[m], (layer, h, table[layer, h], even)


def test_the_stored_model_learned_what_the_notebook_shows():
    names = text_heads.names()
    table = text_heads.measured()
    assert names[0] == ["previous"] * 4 and (table[0, :, 0] > 0.2).all(), "layer 0: previous-character heads"
    assert "word start" in names[1], names  # a layer-1 head goes back to the start of the word
    assert table[1, :, 2].max() > 0.25


def test_the_report_prints_the_measured_numbers():
    lines = text_heads.report().splitlines()
    assert len(lines) == 1 + len(head_measures.MEASURES)
    assert lines[1].split()[1] == f"{text_heads.measured()[0, 0, 0]:.2f}"


def test_maps_are_causal_rows_that_sum_to_one():
    weights = text_heads.maps("The quick brown fox.")
    assert weights.shape == (2, 4, 20, 20)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 4, 20)) and weights.triu(1).abs().max() == 0
    with pytest.raises(ValueError, match="1 to 64 characters"):
        text_heads.maps("x" * 65)


def test_each_map_is_titled_with_its_measured_name():
    import matplotlib.pyplot as plt

    fig = text_heads.figure(text_corpus.probe_sentences()[0])
    titles = [ax.get_title() for ax in fig.axes]
    plt.close(fig)
    assert len(titles) == 8
    for title, name in zip(titles, [n for layer in text_heads.names() for n in layer]):
        assert f"\n{name} " in title and "(even " in title
