"""`attention_course.grading.intake`: a submitted file is read only when it is safe to, and otherwise refused with
one sentence, never followed, never waited on."""

from __future__ import annotations

import json
import os
import time

import pytest

from attention_course.grading.intake import (
    MAX_BYTES,
    MAX_CELLS,
    MAX_DEPTH,
    Unreadable,
    read_bytes,
    read_prefix,
    read_submission,
)

GOOD = {
    "cells": [
        {"cell_type": "code", "metadata": {}, "source": ["x = 1\n", "y = 2"], "outputs": [], "execution_count": None}
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def write(path, data) -> os.PathLike:
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    return path


def refusal(path, top=None) -> Unreadable:
    with pytest.raises(Unreadable) as caught:
        read_submission(path, top)
    return caught.value


def test_a_good_notebook_reads(tmp_path):
    nb = read_submission(write(tmp_path / "a.ipynb", GOOD)).notebook
    assert nb.cells[0].source == "x = 1\ny = 2"


@pytest.mark.parametrize(
    "data, why",
    [
        (b"\xff\xfe{}", "not UTF-8"),
        (b'{"cells": [', "not valid JSON"),  # truncated
        (bytes(range(256)) * 10, "not UTF-8"),  # binary
        (b"[" * 100000 + b"]" * 100000, "nests more than"),  # deeper than Python's recursion limit
        (json.dumps({**GOOD, "metadata": {"x": json.loads("[" * 40 + "]" * 40)}}).encode(), "nests more than"),
        (json.dumps({**GOOD, "nbformat": 3}).encode(), "format 4"),
        (json.dumps({**GOOD, "cells": [{"cell_type": "code", "source": 5}]}).encode(), "cell 1"),
        (json.dumps({**GOOD, "cells": [GOOD["cells"][0]] * (MAX_CELLS + 1)}).encode(), "cells, more than"),
        (b"[]", "format 4"),
    ],
)
def test_a_bad_file_is_refused_with_its_reason(tmp_path, data, why):
    bad = refusal(write(tmp_path / "02.ipynb", data))
    assert why in bad.why and bad.sentence().startswith("02.ipynb could not be graded: ")
    assert f"{MAX_DEPTH}" in bad.why if "nests" in why else True


def test_an_oversized_notebook_is_refused_and_its_copy_stays_oversized(tmp_path):
    big = tmp_path / "big.ipynb"
    with open(big, "wb") as handle:
        handle.truncate(MAX_BYTES + 10)
    assert "MiB" in refusal(big).why
    (tmp_path / "copy.ipynb").write_bytes(read_prefix(big))
    assert (tmp_path / "copy.ipynb").stat().st_size == MAX_BYTES + 1
    assert "MiB" in refusal(tmp_path / "copy.ipynb").why


def test_a_link_is_never_followed(tmp_path):
    secret = write(tmp_path / "solutions.ipynb", GOOD)
    (tmp_path / "02.ipynb").symlink_to(secret)
    assert "link" in refusal(tmp_path / "02.ipynb").why
    with pytest.raises(Unreadable):
        read_bytes(tmp_path / "02.ipynb")
    with pytest.raises(Unreadable):
        read_prefix(tmp_path / "02.ipynb")


def test_a_linked_folder_below_submitted_refuses_the_whole_submission(tmp_path):
    top = tmp_path / "submitted"
    (tmp_path / "elsewhere" / "attention").mkdir(parents=True)
    write(tmp_path / "elsewhere" / "attention" / "02.ipynb", GOOD)
    top.mkdir()
    (top / "mallory").symlink_to(tmp_path / "elsewhere")
    bad = refusal(top / "mallory" / "attention" / "02.ipynb", top)
    assert bad.whole and bad.name == "mallory"
    read_submission(tmp_path / "elsewhere" / "attention" / "02.ipynb", tmp_path)  # no link on that way


def test_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "02.ipynb"
    os.mkfifo(fifo)
    start = time.monotonic()
    assert "regular" in refusal(fifo).why
    assert time.monotonic() - start < 2


def test_a_missing_file_is_refused(tmp_path):
    assert "cannot be opened" in refusal(tmp_path / "gone.ipynb").why
