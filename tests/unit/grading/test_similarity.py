"""The similarity report on a planted class: three copies of one unusual answer (renamed and
commented, reordered, reformatted) among independent right answers rank first; the reference
and the release's hints weigh nothing; student text reaches the page escaped."""

from __future__ import annotations

import ast
import csv
import re
import subprocess
import sys

import pytest

from attention_course.grading.similarity import fingerprints, given
from attention_course.model.manifest import load
from classroom import right_answer, submission, write_submission
from conftest import REPO, course_skeleton

SDPA = "scaled_dot_product_attention"

UNUSUAL = """def scaled_dot_product_attention(q, k, v, mask=None):
    scale = 1.0 / math.sqrt(k.shape[-1])
    kt = k.transpose(-1, -2)
    logits = torch.matmul(q * scale, kt)
    if mask is not None:
        logits = torch.where(mask, logits, logits.new_tensor(float("-inf")))
    top = logits.max(dim=-1, keepdim=True).values
    e = torch.exp(logits - top)
    w = e / e.sum(dim=-1, keepdim=True)
    out = torch.matmul(w, v)
    return out, w
"""
RENAMED = """def scaled_dot_product_attention(query, key, value, mask=None):
    # my own work: scale first
    factor = 1.0/math.sqrt( key.shape[-1] )
    key_t = key.transpose(-1,-2)
    a = torch.matmul(query*factor,
                     key_t)
    if mask is not None:
        a = torch.where(mask, a, a.new_tensor(float('-inf')))  # masked
    biggest = a.max(dim=-1,keepdim=True).values
    ex = torch.exp(a - biggest)
    probs = ex / ex.sum(dim=-1, keepdim=True)
    result = torch.matmul(probs, value)
    return result, probs
"""
REORDERED = '''def scaled_dot_product_attention(q, k, v, mask=None):
    """Attention, written "</pre><script>alert('x')</script>"."""
    kT = k.transpose(-1, -2)
    s = 1.0 / math.sqrt(k.shape[-1])
    lg = torch.matmul(q * s, kT)
    if mask is not None:
        lg = torch.where(mask, lg, lg.new_tensor(float("-inf")))
    m = lg.max(dim=-1, keepdim=True).values
    ee = torch.exp(lg - m)
    ww = ee / ee.sum(dim=-1, keepdim=True)
    return torch.matmul(ww, v), ww
'''
OWN_WORDS = """def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.size(-1)
    scores = torch.matmul(q, k.transpose(-2, -1)) / d ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    attn = F.softmax(scores, dim=-1)
    return torch.matmul(attn, v), attn
"""
TEXTBOOK = """def scaled_dot_product_attention(q, k, v, mask=None):
    dk = k.shape[-1]
    sc = q @ k.transpose(-2, -1) / math.sqrt(dk)
    if mask is not None:
        sc = sc.masked_fill(~mask, float("-inf"))
    p = torch.softmax(sc, dim=-1)
    return p @ v, p
"""
COPIES = {"cora", "cody", "cleo"}


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    course = load(REPO)
    root = course_skeleton(tmp_path_factory.mktemp("similarity"))
    alternatives = course.item(SDPA).alternatives
    answers = {
        "ref1": right_answer(course, SDPA),
        "ref2": right_answer(course, SDPA),
        "alt1": alternatives[0],
        "alt2": alternatives[1],
        "owen": OWN_WORDS,
        "tess": TEXTBOOK,
        "tina": re.sub(r"\bsc\b", "raw", TEXTBOOK.replace("dk", "size")),
        "cora": UNUSUAL,
        "cody": RENAMED,
        "cleo": REORDERED,
    }
    for student, text in answers.items():
        write_submission(root, student, submission(course, {SDPA: text}), "attention")
    out = root / "build" / "similarity"
    proc = subprocess.run(
        [sys.executable, "-m", "attention_course.grading.similarity", "--course", str(root)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root, out


def test_the_planted_copies_rank_first(planted):
    _root, out = planted
    with open(out / "similarity.csv", newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["exercise"] == SDPA]
    top = [{r["student_a"], r["student_b"]} for r in rows[:3]]
    assert all(pair <= COPIES for pair in top), rows[:5]
    assert float(rows[2]["score"]) > 2 * float(rows[3]["score"]), rows[:5]
    # two students who both handed in the reference share nothing unusual
    same = next(r for r in rows if {r["student_a"], r["student_b"]} == {"ref1", "ref2"})
    assert float(same["score"]) == 0.0


def test_the_page_escapes_student_text(planted):
    _root, out = planted
    page = (out / f"{SDPA}.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "cora" in page and "my own work" in page
    assert "10 definitions" in page


def test_renaming_and_formatting_do_not_change_fingerprints():
    plain, renamed = (fingerprints(ast.parse(t).body[0]) for t in (UNUSUAL, RENAMED))
    assert plain == renamed
    assert fingerprints(ast.parse(OWN_WORDS).body[0]) != plain


def test_the_reference_and_the_hints_are_given():
    course = load(REPO)
    known = given(course, course.item(SDPA), ["en"])
    reference = fingerprints(ast.parse(right_answer(course, SDPA)).body[0])
    assert set(reference) <= set(known)
    # a line of a hint (inline code in the release's markdown) is given too
    assert any("transpose" in p for p in known)
