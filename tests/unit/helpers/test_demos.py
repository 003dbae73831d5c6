"""The numbers behind the demos say what the notebooks claim."""

from __future__ import annotations

import math

import pytest
import torch

import attention_course.grading  # noqa: F401
from helpers import demos
from helpers.casefile import load_cases, save_cases
from helpers.exercises import Case


def test_score_variance_grows_like_d_k_and_scaling_brings_it_back_to_one():
    for row in demos.score_variance([1, 16, 256]):
        assert row["var_raw"] == pytest.approx(row["d_k"], rel=0.1)
        assert row["var_scaled"] == pytest.approx(1.0, rel=0.1)


def test_unscaled_softmax_saturates_and_its_gradient_vanishes_while_scaled_stays_steady():
    rows = demos.sharpness_table([1, 64, 1024], trials=500)
    raw_max = [r["max_weight_raw"] for r in rows]
    raw_grad = [r["grad_norm_raw"] for r in rows]
    assert raw_max == sorted(raw_max) and raw_max[-1] > 0.9
    assert raw_grad == sorted(raw_grad, reverse=True) and raw_grad[-1] < raw_grad[0] / 5
    scaled_grad = [r["grad_norm_scaled"] for r in rows]
    assert max(scaled_grad) < 1.2 * min(scaled_grad)


def test_softmax_sharpness_reports_the_score_spread():
    row = demos.softmax_sharpness(256, scaled=False, trials=500)
    assert row["score_std"] == pytest.approx(math.sqrt(256), rel=0.1)


def test_toy_sentence_gives_equal_words_equal_embeddings():
    tokens, x = demos.toy_sentence()
    assert tokens.count("the") == 2 and torch.equal(x[0], x[4])


def test_attempt_turns_a_missing_implementation_into_one_sentence(capsys):
    def stub(*args):
        raise NotImplementedError()

    assert demos.attempt("raw_scores", stub, 1) is None
    assert capsys.readouterr().out.strip() == (
        "This demo uses your `raw_scores`. Implement `raw_scores` above first, then run this cell again."
    )
    assert demos.attempt("raw_scores", lambda a: a + 1, 1) == 2


def test_case_file_round_trip_is_exact_and_deterministic(tmp_path):
    case = Case(
        "raw_scores",
        "demo",
        {"q": torch.randn(2, 3), "k": torch.randn(4, 3)},
        params={"n": 1},
        expected=(torch.randn(2, 4, dtype=torch.float64),),
        mistakes={"m": (torch.zeros(2, 4),)},
    )
    save_cases([case], tmp_path / "a.npz")
    save_cases([case], tmp_path / "b.npz")
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    [back] = load_cases(tmp_path / "a.npz")
    assert list(back.tensors) == ["q", "k"] and torch.equal(back.tensors["q"], case.tensors["q"])
    assert torch.equal(back.expected[0], case.expected[0]) and back.mistakes["m"][0].shape == (2, 4)


def test_being_graded_follows_nbgrader_execution(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    assert not demos.being_graded()
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")
    assert not demos.being_graded()
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert demos.being_graded()


# ----------------------------------------------------------------------------- notebooks 01-06


def test_a_default_linear_layer_gives_about_a_third_of_the_input_variance():
    assert demos.linear_output_variance(256) == pytest.approx(1 / 3, abs=0.03)


def test_head_split_rows_keep_parameters_and_products_but_not_the_weights():
    rows = demos.head_split_rows(d_model=64, heads=[1, 2, 4], seq_len=10)
    assert len({r["params_total"] for r in rows}) == 1 and len({r["score_mult_adds"] for r in rows}) == 1
    assert [r["weights"] for r in rows] == [100, 200, 400]
    assert rows[0]["params_total"] == 3 * (64 * 64 + 64)


def test_step_prints_the_shape_and_passes_on_only_right_results(capsys):
    x = torch.zeros(2, 3)
    assert demos.step("a", "f", lambda t: t, x, expect=(2, 3), meaning="(B, T)") is x
    assert demos.step("b", "f", lambda t: t.T, x, expect=(2, 3)) is None
    assert demos.step("c", "f", None, x, expect=(2, 3)) is None
    assert demos.step("d", "f", lambda t: t, None, expect=(2, 3)) is None
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "a: (2, 3) ✓ (B, T)" and "✗ expected (2, 3)" in out[1]
    assert out[2].startswith("c: skipped") and out[3].startswith("d: skipped")


def test_load_function_reads_another_notebook_or_says_why_not(tmp_path, monkeypatch, capsys):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("def double(x):\n    return 2 * x\n\ndef stub(x):\n    raise NotImplementedError()\n")
    ]
    nbformat.write(nb, tmp_path / "other.ipynb")
    monkeypatch.chdir(tmp_path)
    assert demos.load_function("other.ipynb", "double", probe=(2,))(3) == 6
    assert demos.load_function("other.ipynb", "stub", probe=(2,)) is None
    assert demos.load_function("other.ipynb", "missing") is None
    assert demos.load_function("absent.ipynb", "double") is None
    out = capsys.readouterr().out
    assert "not implemented yet" in out and "does not define it yet" in out and "was not found" in out


def _reference_mha():
    from attention_course.model.manifest import load
    from attention_course.model.reference import reference

    course = load()
    return reference(course, course.item("MultiHeadAttention"))


def test_causal_self_attention_matches_a_causal_mask_and_drops_weights_in_training():
    torch.manual_seed(0)
    mha = _reference_mha()(16, 4).double()
    x = demos.unit_normal(2, 5, 16, seed=1).double()
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    fast = demos.CausalSelfAttention(mha, p_drop=0.5).eval()
    with torch.no_grad():
        want, _weights = mha(x, x, x, mask=causal)
        got, none = fast(x, x, x)
        assert none is None and demos.max_difference(got, want) < 1e-12
        fast.train()
        assert demos.max_difference(fast(x, x, x)[0], want) > 1e-3
    with pytest.raises(ValueError, match="is_causal"):
        fast(x, x, x, mask=causal)


def test_builtin_attention_speaks_the_course_mask_convention():
    torch.manual_seed(0)
    attention = demos.BuiltinAttention(8, 2)
    x = demos.unit_normal(1, 4, 8, seed=2)
    may_attend = torch.ones(4, 4, dtype=torch.bool).tril()
    with torch.no_grad():
        out, weights = attention(x, x, x, mask=may_attend)
    assert out.shape == (1, 4, 8) and weights.shape == (1, 2, 4, 4)
    assert (weights[..., ~may_attend] == 0).all() and torch.allclose(weights.sum(-1), torch.ones(1, 2, 4))


def test_toy_head_names_name_every_head():
    assert len(demos.toy_head_names()) == 4 == demos.toy_heads()[2]["W_q.weight"].shape[0] // 6


# ----------------------------------------------------------------------------- translatable text

STUDENT_FACING_CALLS = {
    "print",
    "set_title",
    "set_xlabel",
    "set_ylabel",
    "suptitle",
    "supxlabel",
    "supylabel",
    "MissingImplementation",
    "ValueError",
    "passed",
}
STUDENT_FACING_KEYWORDS = {"label", "description", "title", "suptitle", "limit_label"}
HELPER_MODULES = [
    "demos",
    "scaling",
    "earlier",
    "plots",
    "dk_lab",
    "heads_lab",
    "trained_heads",
    "positions",
    "text_heads",
    "relations_task",
]


def _has_words(node) -> bool:
    """A string constant, or an f-string with literal text, that contains letters."""
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return any(c.isalpha() for c in node.value)
    if isinstance(node, ast.JoinedStr):
        return any(_has_words(v) for v in node.values if isinstance(v, ast.Constant))
    if isinstance(node, ast.BinOp):
        return _has_words(node.left) or _has_words(node.right)
    return False


def bare_strings(source: str) -> list[str]:
    """Student-facing texts in `source` that are not wrapped in _()."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        values = list(node.args) if name in STUDENT_FACING_CALLS else []
        values += [k.value for k in node.keywords if k.arg in STUDENT_FACING_KEYWORDS]
        found += [ast.unparse(v) for v in values if _has_words(v)]
    return found


def test_the_scanner_finds_bare_strings():
    assert bare_strings('print("hello")\nax.set_title(f"head {h}")\nplot(label="x")') == [
        "'hello'",
        "f'head {h}'",
        "'x'",
    ]
    assert bare_strings('print(_("hello"))\nprint(f"{a}: {b}")\nax.set_title(_("h {h}").format(h=1))') == []


@pytest.mark.parametrize("module", HELPER_MODULES)
def test_every_student_facing_text_of_the_helpers_is_translatable(module):
    from pathlib import Path

    import helpers

    source = (Path(helpers.__file__).parent / f"{module}.py").read_text(encoding="utf-8")
    assert bare_strings(source) == []
