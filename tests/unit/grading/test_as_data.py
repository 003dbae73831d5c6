"""A folder as data and back (what a Dask worker is sent and sends back): files, links kept as
links, special files as FIFOs, nothing written outside the destination, archives reproducible."""

from __future__ import annotations

import os
import stat

import pytest

from attention_course.grading import as_data


def _folder(root):
    (root / "sub").mkdir(parents=True)
    (root / "a.ipynb").write_bytes(b'{"cells": []}')
    (root / "sub" / "b.txt").write_text("b")
    (root / "link.ipynb").symlink_to("/etc/passwd")
    (root / "dirlink").symlink_to(root / "sub", target_is_directory=True)
    os.mkfifo(root / "pipe.ipynb")
    return root


def test_a_folder_comes_back_as_it_was_without_following_a_link_or_opening_a_fifo(tmp_path):
    data = as_data.pack(_folder(tmp_path / "in"))
    assert data == {
        "a.ipynb": ("file", b'{"cells": []}'),
        "dirlink": ("link", str(tmp_path / "in" / "sub")),
        "link.ipynb": ("link", "/etc/passwd"),
        "pipe.ipynb": ("special", ""),
        "sub/b.txt": ("file", b"b"),
    }
    out = tmp_path / "out"
    as_data.unpack(data, out)
    assert os.readlink(out / "link.ipynb") == "/etc/passwd"
    assert stat.S_ISFIFO((out / "pipe.ipynb").lstat().st_mode)
    assert (out / "sub" / "b.txt").read_text() == "b"
    assert as_data.pack(out) == data
    assert as_data.digest(data) == as_data.digest(as_data.pack(out))
    assert as_data.pack(tmp_path / "missing") == {}


@pytest.mark.parametrize("name", ["../escape", "/etc/x", "a/../../x", ""])
def test_unpacking_refuses_a_path_that_leaves_the_folder(tmp_path, name):
    with pytest.raises(ValueError, match="leave its folder"):
        as_data.unpack({name: ("file", b"x")}, tmp_path / "out")
    assert not (tmp_path / "escape").exists()


def test_the_digest_sees_names_kinds_and_contents():
    base = {"a": ("file", b"1")}
    others = [{"a": ("file", b"2")}, {"b": ("file", b"1")}, {"a": ("link", "1")}, {**base, "c": ("special", "")}]
    assert len({as_data.digest(d) for d in [base, *others]}) == 5


def test_a_tar_of_the_same_files_is_the_same_bytes_and_unpacks_only_what_was_kept(tmp_path):
    root = _folder(tmp_path / "in")
    keep = lambda rel: rel.parts[0] != "sub"
    first = as_data.tar(root, keep)
    os.utime(root / "a.ipynb", (0, 0))
    assert as_data.tar(root, keep) == first
    as_data.untar(first, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.ipynb"]  # no links, no FIFO, no sub/
