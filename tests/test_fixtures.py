"""The committed case file is what the grading tools build from the source notebooks."""
from __future__ import annotations

import torch

import grading  # noqa: F401
from grading.fixtures import build_cases
from helpers.casefile import load_cases


def test_case_file_is_in_sync_with_the_source_solutions():
    built = build_cases()
    stored = load_cases()
    hint = "the case file is stale: run `.venv/bin/python -m grading.fixtures` and `make release`"
    assert [(c.exercise, c.name) for c in stored] == [(c.exercise, c.name) for c in built], hint
    for s, b in zip(stored, built):
        assert s.params == b.params and s.raises == b.raises and s.hidden == b.hidden, hint
        assert all(torch.equal(s.tensors[k], b.tensors[k]) for k in b.tensors), hint
        assert all(torch.allclose(x, y, atol=1e-9, rtol=1e-9) for x, y in zip(s.expected, b.expected)), hint
        assert set(s.mistakes) == set(b.mistakes), (s.exercise, s.name, hint)
