"""The stored weights are what `make weights` makes from the code as it is now: their digests, the
code's digest and the first training steps, retrained here, match what the build recorded."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attention_course.authoring import weights as build
from helpers import training
from helpers.heads_lab import D_MODEL, divisors

RECORD = json.loads((training.DATA / "weights.json").read_text())


def test_the_weights_are_small_and_plain_arrays():
    files = [training.DATA / name for name in RECORD["files"]]
    assert sum(f.stat().st_size for f in files) <= 2 * 1024 * 1024
    for f in files:
        with np.load(f, allow_pickle=False) as stored:  # raises on pickled objects
            assert all(stored[k].dtype == np.float32 for k in stored.files)


def test_the_files_hold_what_the_build_wrote():
    for name, recorded in RECORD["files"].items():
        assert training.digest(training.load(training.DATA / name)) == recorded, f"{name} changed since `make weights`"


def test_the_weights_were_made_by_the_code_as_it_is():
    assert build.code_digest() == RECORD["code"], "the models' code changed: run `make weights` and commit the data"


@pytest.mark.parametrize("num_heads", divisors(D_MODEL))
def test_retraining_the_first_steps_gives_the_recorded_losses(num_heads):
    _model, losses = build.heads_lab_model(num_heads, steps=build.CHECKED_STEPS)
    assert losses == pytest.approx(RECORD["first_losses"][f"h{num_heads}"], rel=1e-5)


def test_retraining_the_text_model_gives_the_recorded_losses():
    if build.text_digest() != RECORD["text"]:
        pytest.skip("this Python's pydoc_data differs from the one the weights were built with")
    _model, losses = build.text_model(steps=build.CHECKED_STEPS)
    assert losses == pytest.approx(RECORD["first_losses"]["text"], rel=1e-5)


def test_a_digest_sees_any_change():
    arrays = {"a/w": np.zeros((2, 2), np.float32)}
    changed = {"a/w": np.array([[0, 0], [0, 1e-7]], np.float32)}
    assert training.digest(arrays) != training.digest(changed)
    assert training.digest(arrays) != training.digest({"b/w": arrays["a/w"]})
