"""The sandbox driver's channel back to the grader: a result keeps its shape and numbers on the
way, whatever its number of axes (a 0-dimensional share came back as shape (1,) once, and the
trusted grader scored right answers of `saturated_share` 0)."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

from attention_course.sandbox.driver import _contiguous, _send, read_frames


@pytest.mark.parametrize("shape", [(), (1,), (3,), (2, 3), (2, 1, 4)])
def test_a_result_keeps_its_shape_through_the_channel(shape):
    array = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) + 0.5
    read, write = os.pipe()
    _send(write, {"case": 0}, {"r0": array})
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        [(header, arrays)] = list(read_frames(io.BufferedReader(stream)))
    assert header == {"case": 0}
    assert arrays["r0"].shape == shape and np.array_equal(arrays["r0"], array)


def test_a_transposed_array_is_made_contiguous_with_its_shape():
    array = np.arange(6.0).reshape(2, 3).T
    out = _contiguous(array)
    assert out.flags.c_contiguous and out.shape == (3, 2) and np.array_equal(out, array)
    assert _contiguous(np.float64(2.5)).shape == ()
