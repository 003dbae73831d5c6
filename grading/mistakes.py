"""The catalogue of common wrong answers, written as edits of the reference solutions.

Each mistake is a list of (old, new) text substitutions applied to the answer cell of the
source notebook. The same catalogue gives the case file its known wrong results (so the checks
can name a mistake) and, later, the mutation suite its wrong submissions.
"""
from __future__ import annotations

from helpers.feedback import MISTAKES

from .reference import define, solution_source

SQRT = "math.sqrt(d_k)"
MASK_FILL = 'scores = scores.masked_fill(~mask, float("-inf"))'
RETURN_PAIR = "return weights @ v, weights"
MHA_RETURN = "return self.W_o(out), weights"

EDITS: dict[str, dict[str, list[tuple[str, str]]]] = {
    "raw_scores": {
        "no_transpose": [("q @ k.transpose(-2, -1)", "q @ k")],
        "transposed_result": [("q @ k.transpose(-2, -1)", "k @ q.transpose(-2, -1)")],
        "dot_T": [("k.transpose(-2, -1)", "k.T")],
        "wrong_axes": [("k.transpose(-2, -1)", "k.transpose(0, 1)")],
        "pairwise": [("q @ k.transpose(-2, -1)", "(q * k).sum(-1)")],
        "feature_gram": [("q @ k.transpose(-2, -1)", "q.transpose(-2, -1) @ k")],
        "already_scaled": [("q @ k.transpose(-2, -1)", "q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5")],
    },
    "scaled_scores": {
        "no_scale": [(f" / {SQRT}", "")],
        "divide_by_d": [(SQRT, "d_k")],
        "multiply": [(f"/ {SQRT}", f"* {SQRT}")],
        "sqrt_of_seq_len": [("d_k = q.shape[-1]", "d_k = q.shape[-2]")],
        "sqrt_of_batch": [("d_k = q.shape[-1]", "d_k = q.shape[0]")],
        "floor_division": [(f"/ {SQRT}", f"// {SQRT}")],
        "scale_by_log": [(SQRT, "math.log(d_k)")],
    },
    "scaled_dot_product_attention": {
        "no_scale": [(f" / {SQRT}", "")],
        "divide_by_d": [(SQRT, "d_k")],
        "scale_by_d_v": [("d_k = q.shape[-1]", "d_k = v.shape[-1]")],
        "softmax_wrong_axis": [("torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)")],
        "mask_inverted": [("masked_fill(~mask", "masked_fill(mask")],
        "mask_ignored": [(MASK_FILL, "pass")],
        "mask_after_softmax": [(MASK_FILL, "pass"),
                               (RETURN_PAIR, "if mask is not None:\n        weights = weights.masked_fill(~mask, 0.0)\n"
                                             "    " + RETURN_PAIR)],
        "mask_with_zero": [('float("-inf")', "0.0")],
        "naive_softmax": [("torch.softmax(scores, dim=-1)", "scores.exp() / scores.exp().sum(-1, keepdim=True)")],
        "swapped_outputs": [(RETURN_PAIR, "return weights, weights @ v")],
        "returns_scores": [(RETURN_PAIR, "return weights @ v, scores")],
        "blend_keys": [(RETURN_PAIR, "return weights @ k, weights")],
    },
    "split_heads": {
        "bare_view": [("x.view(B, T, num_heads, d_head).transpose(1, 2)", "x.view(B, num_heads, T, d_head)")],
        "no_transpose": [("x.view(B, T, num_heads, d_head).transpose(1, 2)", "x.view(B, T, num_heads, d_head)")],
        "wrong_transpose": [(".transpose(1, 2)", ".transpose(2, 3)")],
        "interleaved": [("x.view(B, T, num_heads, d_head).transpose(1, 2)",
                         "x.view(B, T, d_head, num_heads).permute(0, 3, 1, 2)")],
        "no_value_error": [("if d_model % num_heads != 0:", "if False:")],
        "assert_instead": [("if d_model % num_heads != 0:\n        raise ValueError(",
                            "if True:\n        assert d_model % num_heads == 0, (")],
        "message_without_numbers": [('f"d_model={d_model} is not divisible by num_heads={num_heads}"',
                                     '"d_model is not divisible by num_heads"')],
    },
    "concat_heads": {
        "view_after_transpose": [(".reshape(", ".view(")],
        "no_transpose": [("x.transpose(1, 2).reshape", "x.reshape")],
        "wrong_transpose": [("x.transpose(1, 2)", "x.transpose(2, 3)")],
        "interleaved": [("x.transpose(1, 2)", "x.permute(0, 2, 3, 1)")],
        "cat_over_time": [("x.transpose(1, 2).reshape(B, T, H * d_head)", "torch.cat(x.unbind(1), dim=-2)")],
        "reversed_heads": [("x.transpose(1, 2)", "x.flip(1).transpose(1, 2)")],
    },
    "MultiHeadAttention": {
        "no_output_projection": [(MHA_RETURN, "return out, weights")],
        "scale_by_d_model": [("math.sqrt(d_head)", "math.sqrt(d_model)")],
        "softmax_wrong_axis": [("torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)")],
        "bare_view_split": [(f"self.{w}({x}).view(B, {t}, H, d_head).transpose(1, 2)",
                             f"self.{w}({x}).view(B, H, {t}, d_head)")
                            for w, x, t in (("W_q", "query", "T_q"), ("W_k", "key", "T_k"), ("W_v", "value", "T_k"))],
        "concat_without_transpose": [("heads.transpose(1, 2).reshape", "heads.reshape")],
        "projections_swapped": [("self.W_q(query)", "self.W_k(query)"), ("self.W_k(key)", "self.W_q(key)")],
        "self_attention_only": [("self.W_k(key)", "self.W_k(query)"), ("self.W_v(value)", "self.W_v(query)")],
        "mask_inverted": [("masked_fill(~mask", "masked_fill(mask")],
        "mask_ignored": [(MASK_FILL, "pass")],
        "averaged_weights": [(MHA_RETURN, "return self.W_o(out), weights.mean(dim=1)")],
    },
    "to_torch_mha": {
        "qkv_order": [("[W_q.weight, W_k.weight, W_v.weight]", "[W_k.weight, W_q.weight, W_v.weight]")],
        "batch_first_default": [("batch_first=True, ", "")],
        "no_bias_copy": [("torch_mha.in_proj_bias.copy_(torch.cat([W_q.bias, W_k.bias, W_v.bias]))", "pass"),
                         ("torch_mha.out_proj.bias.copy_(W_o.bias)", "pass")],
        "no_out_proj": [("torch_mha.out_proj.weight.copy_(W_o.weight)", "pass")],
        "transposed_weights": [("[W_q.weight, W_k.weight, W_v.weight]", "[W_q.weight.T, W_k.weight.T, W_v.weight.T]"),
                               ("copy_(W_o.weight)", "copy_(W_o.weight.T)")],
        "one_head": [("mha.num_heads,", "1,")],
        "dtype_not_kept": [("dtype=W_q.weight.dtype", "dtype=torch.float32")],
    },
}


def mistake_source(exercise: str, mistake: str) -> str:
    """The answer cell of an exercise with one mistake written into it."""
    source = solution_source(exercise)
    for old, new in EDITS[exercise][mistake]:
        if old not in source:
            raise LookupError(f"Mistake {exercise}/{mistake}: {old!r} is not in the solution.")
        source = source.replace(old, new)
    return source


def mistaken(exercise: str, mistake: str):
    """The function or class of an exercise with one mistake in it."""
    return define(mistake_source(exercise, mistake), exercise)


def catalogue() -> list[tuple[str, str]]:
    """Every (exercise, mistake) pair of the catalogue."""
    return [(e, m) for e, mistakes in EDITS.items() for m in mistakes]


def unexplained() -> list[tuple[str, str]]:
    """Catalogue entries without a sentence in helpers.feedback.MISTAKES (should be none)."""
    return [pair for pair in catalogue() if pair not in MISTAKES]
