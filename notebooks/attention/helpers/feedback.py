"""How a check talks to a student: the failure it raises and the sentences it says.

`CheckFailed` shows as a short red message in the notebook instead of a long traceback.
`call_student` runs a student's function for a lab or demo and turns a failure into one
sentence (`MissingImplementation`). `MISTAKES` holds one sentence per common wrong answer of each exercise; the checks name the
mistake when a result matches it. `ERROR_HINTS` explains common exceptions.
"""
from __future__ import annotations

import re

import torch


class CheckFailed(AssertionError):
    """A check did not pass. In IPython it shows as its message alone, without a traceback."""

    def _render_traceback_(self):  # IPython's hook for custom error display
        red, bold, reset = "\x1b[31m", "\x1b[1m", "\x1b[0m"
        lines = str(self).splitlines() or ["Check failed."]
        return [f"{red}{bold}✗ {lines[0]}{reset}"] + [f"{red}  {line}{reset}" for line in lines[1:]]


class MissingImplementation(Exception):
    """A lab or demo needs a student's function that is not done or fails; the message says which."""


def call_student(name: str, fn, *args, then: str = "move the slider again", **kwargs):
    """Call a student's function for a lab or demo, turning any failure into one sentence.

    A stub (NotImplementedError) asks for the exercise first; any other exception is named
    with its message and points back to the exercise's check. Raises MissingImplementation.
    """
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        raise MissingImplementation(f"Implement `{name}` above first, then {then}.") from None
    except Exception as exc:  # a lab should point back to the exercise, not show a traceback
        raise MissingImplementation(f"Your `{name}` raised {type(exc).__name__}: {exc}. "
                                    f"Its check above says more.") from None


def passed(text: str) -> None:
    """Tell the student a check passed."""
    print(f"✓ {text}")


def shape_of(value) -> str:
    """A tensor's shape written like a tuple, `(2, 3)`; other values by their type."""
    if isinstance(value, torch.Tensor):
        return str(tuple(value.shape))
    return f"a {type(value).__name__}"


def preview(tensor: torch.Tensor, index: tuple = (), width: int = 5) -> str:
    """A few values of `tensor` along its last axis, starting at `index` (a leading index)."""
    t = tensor.detach()
    if t.dim() == 0:
        return f"{t.item():.4f}"
    row = t[index] if index else t
    while row.dim() > 1:
        row = row[0]
    values = ", ".join(f"{float(x):.4f}" for x in row[:width])
    more = ", ..." if row.shape[0] > width else ""
    return f"[{values}{more}]"


def first_difference(received: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> tuple:
    """The leading index (all axes but the last) of the first row where two tensors differ."""
    close = torch.isclose(received.double(), expected.double(), atol=atol, rtol=rtol, equal_nan=True)
    bad = (~close).nonzero()
    if bad.numel() == 0 or received.dim() < 2:
        return ()
    return tuple(int(i) for i in bad[0][:-1])


# One sentence per common wrong answer, keyed by (exercise, mistake id).
MISTAKES: dict[tuple[str, str], str] = {
    # raw_scores
    ("raw_scores", "no_transpose"):
        "It looks like you computed q @ k without transposing k: each score needs a row of q "
        "times a row of k, so use q @ k.transpose(-2, -1).",
    ("raw_scores", "transposed_result"):
        "Your scores are transposed (keys by queries): compute q @ k^T, not k @ q^T; "
        "rows are queries, columns are keys.",
    ("raw_scores", "dot_T"):
        "`.T` reverses every axis of a batched tensor, batch axes included; swap only the last "
        "two with k.transpose(-2, -1) (or k.mT).",
    ("raw_scores", "wrong_axes"):
        "You transposed the wrong axes of k: with batch axes in front, swap the last two, "
        "k.transpose(-2, -1), not axes 0 and 1.",
    ("raw_scores", "pairwise"):
        "You multiplied q and k element by element: that pairs query i with key i only, but "
        "every query needs a score against every key (a matrix product).",
    ("raw_scores", "feature_gram"):
        "You multiplied q^T by k, which compares features with features; attention compares "
        "positions: q @ k^T has shape (T_q, T_k).",
    ("raw_scores", "already_scaled"):
        "These scores are already divided by sqrt(d_k): raw_scores is the plain q @ k^T, "
        "scaling comes in the next exercise.",
    # scaled_scores
    ("scaled_scores", "no_scale"):
        "These are the raw scores: divide them by sqrt(d_k) to bring their spread back to about 1.",
    ("scaled_scores", "divide_by_d"):
        "You divided by d_k instead of sqrt(d_k): the variance of q.k grows like d_k, so its "
        "standard deviation grows like sqrt(d_k), and that is what we divide by.",
    ("scaled_scores", "multiply"):
        "You multiplied by sqrt(d_k); divide by it instead.",
    ("scaled_scores", "sqrt_of_seq_len"):
        "You scaled by the square root of a sequence length; d_k is the size of the last axis "
        "of q and k (q.shape[-1]), not the number of positions.",
    ("scaled_scores", "sqrt_of_batch"):
        "You took d_k from the first axis (shape[0]), which is a batch axis here; d_k is "
        "q.shape[-1].",
    ("scaled_scores", "floor_division"):
        "`//` rounds down to whole numbers; use `/` for the division by sqrt(d_k).",
    ("scaled_scores", "scale_by_log"):
        "The scale is 1/sqrt(d_k) (math.sqrt or ** 0.5), not a logarithm or another power.",
    # scaled_dot_product_attention
    ("scaled_dot_product_attention", "no_scale"):
        "The weights are too sharp: you forgot to divide the scores by sqrt(d_k) before the softmax.",
    ("scaled_dot_product_attention", "divide_by_d"):
        "The weights are too flat: you divided the scores by d_k; divide by sqrt(d_k).",
    ("scaled_dot_product_attention", "scale_by_d_v"):
        "You scaled by sqrt of the size of v; the scale is sqrt(d_k), the size of q and k "
        "(q.shape[-1]), which may differ from v's.",
    ("scaled_dot_product_attention", "softmax_wrong_axis"):
        "Softmax ran over the wrong axis: each query's weights (a row, dim=-1) must sum to 1, "
        "yours sum to 1 down the columns.",
    ("scaled_dot_product_attention", "mask_inverted"):
        "The mask is inverted: True means 'may attend' (as in F.scaled_dot_product_attention), "
        "so fill the scores where the mask is False.",
    ("scaled_dot_product_attention", "mask_ignored"):
        "The mask is ignored: where mask is False the weight must be exactly 0.",
    ("scaled_dot_product_attention", "mask_after_softmax"):
        "You zeroed the masked weights after the softmax, so the rows no longer sum to 1; "
        "mask the scores with -inf before the softmax.",
    ("scaled_dot_product_attention", "mask_with_zero"):
        "Masked scores were set to 0, but exp(0) = 1 still gives them weight; set them to "
        "-inf (or a very large negative number) before the softmax.",
    ("scaled_dot_product_attention", "naive_softmax"):
        "exp() of large scores overflows to inf and the weights become NaN; use torch.softmax, "
        "which subtracts the row maximum first.",
    ("scaled_dot_product_attention", "swapped_outputs"):
        "The two results are swapped: return (output, weights), output first.",
    ("scaled_dot_product_attention", "returns_scores"):
        "The second result holds the scores; return the weights, softmax of the scaled scores.",
    ("scaled_dot_product_attention", "blend_keys"):
        "You blended the keys; the output is the weighted sum of the values: weights @ v.",
    # split_heads
    ("split_heads", "bare_view"):
        "A bare view(B, H, T, d_head) mixes positions into heads: view(B, T, H, d_head) "
        "first, then transpose(1, 2).",
    ("split_heads", "no_transpose"):
        "The heads axis is in the wrong place: after view(B, T, H, d_head) transpose axes 1 "
        "and 2 to get (B, H, T, d_head).",
    ("split_heads", "wrong_transpose"):
        "You swapped the wrong axes: from (B, T, H, d_head) transpose(1, 2) gives "
        "(B, H, T, d_head).",
    ("split_heads", "interleaved"):
        "Your heads take every H-th feature; head h must get the contiguous slice "
        "[h*d_head, (h+1)*d_head): view(B, T, H, d_head), not view(B, T, d_head, H).",
    ("split_heads", "no_value_error"):
        "When d_model is not divisible by num_heads, raise ValueError yourself, naming both "
        "numbers, before reshaping.",
    ("split_heads", "assert_instead"):
        "Use `raise ValueError(...)` for an indivisible head count, not assert: asserts "
        "can be switched off and raise the wrong type.",
    ("split_heads", "message_without_numbers"):
        "Your ValueError should name both numbers, d_model and num_heads, so the user can see "
        "what to change.",
    # concat_heads
    ("concat_heads", "view_after_transpose"):
        "`.view` cannot follow `.transpose`: the transposed tensor is not contiguous in "
        "memory; use `.reshape(...)` or `.contiguous().view(...)`.",
    ("concat_heads", "no_transpose"):
        "Reshaping (B, H, T, d_head) straight to (B, T, H*d_head) mixes positions and heads: "
        "transpose(1, 2) first, then reshape.",
    ("concat_heads", "wrong_transpose"):
        "You swapped the wrong axes: transpose(1, 2) turns (B, H, T, d_head) into "
        "(B, T, H, d_head), ready to merge the last two.",
    ("concat_heads", "interleaved"):
        "Your features are interleaved (head index fastest); each head's d_head features must "
        "stay together: transpose(1, 2), then merge the last two axes.",
    ("concat_heads", "cat_over_time"):
        "You concatenated the heads along the positions; concatenate along the features "
        "(the last axis) so the result is (B, T, H*d_head).",
    ("concat_heads", "reversed_heads"):
        "The heads come out in reverse order; head 0 comes first in the concatenation.",
    # MultiHeadAttention
    ("MultiHeadAttention", "no_output_projection"):
        "The output skips W_o: after concatenating the heads, project with self.W_o so the "
        "heads' findings are mixed.",
    ("MultiHeadAttention", "scale_by_d_model"):
        "You scaled by sqrt(d_model); each head attends in d_head dimensions, so scale by "
        "sqrt(d_head).",
    ("MultiHeadAttention", "softmax_wrong_axis"):
        "Softmax ran over the wrong axis: each query's weights (dim=-1) must sum to 1.",
    ("MultiHeadAttention", "bare_view_split"):
        "Splitting heads with a bare view(B, H, T, d_head) mixes positions; use "
        "view(B, T, H, d_head).transpose(1, 2).",
    ("MultiHeadAttention", "concat_without_transpose"):
        "Concatenating with a bare reshape mixes positions and heads: transpose(1, 2) "
        "back to (B, T, H, d_head) first.",
    ("MultiHeadAttention", "projections_swapped"):
        "The projections are mixed up: queries go through W_q, keys through W_k, values "
        "through W_v.",
    ("MultiHeadAttention", "self_attention_only"):
        "You projected the query for all three of q, k and v; in cross-attention the keys "
        "and values come from `key` and `value`.",
    ("MultiHeadAttention", "mask_inverted"):
        "The mask is inverted: True means 'may attend', so fill the scores where the mask "
        "is False.",
    ("MultiHeadAttention", "mask_ignored"):
        "The mask is ignored: where mask is False the weight must be exactly 0.",
    ("MultiHeadAttention", "averaged_weights"):
        "Return the weights of every head, shape (B, H, T_q, T_k), not their average.",
    # to_torch_mha
    ("to_torch_mha", "qkv_order"):
        "in_proj_weight stacks the projections in the order q, k, v: "
        "torch.cat([W_q.weight, W_k.weight, W_v.weight]).",
    ("to_torch_mha", "batch_first_default"):
        "nn.MultiheadAttention defaults to batch_first=False (inputs (T, B, d)); pass "
        "batch_first=True.",
    ("to_torch_mha", "no_bias_copy"):
        "The biases were not copied: fill in_proj_bias with the q, k, v biases and "
        "out_proj.bias with W_o's.",
    ("to_torch_mha", "no_out_proj"):
        "out_proj still has its random initial weights: copy W_o into out_proj.",
    ("to_torch_mha", "transposed_weights"):
        "nn.Linear and nn.MultiheadAttention store weights the same way, (out, in): copy "
        "them as they are, without transposing.",
    ("to_torch_mha", "one_head"):
        "The module has the wrong number of heads: pass num_heads=mha.num_heads.",
    ("to_torch_mha", "dtype_not_kept"):
        "The new module is float32 but the original is float64: move it to the original's "
        "dtype (for instance .to(mha.W_q.weight.dtype)).",
}


# Explanations for exceptions a student's code raises, matched against the error message.
ERROR_HINTS: list[tuple[str, str]] = [
    (r"view size is not compatible with input tensor's size and stride",
     "`.view` needs a contiguous tensor and a transposed one is not: use `.reshape(...)` or "
     "`.contiguous().view(...)`."),
    (r"mat1 and mat2 shapes cannot be multiplied|size mismatch|must match the size of tensor",
     "Two shapes do not fit together: check which axes you multiply or transpose."),
    (r"expected .* to have the same dtype|same dtype|found dtype",
     "Two tensors have different dtypes: keep the dtype of the inputs (float32 or float64) "
     "throughout."),
    (r"The use of `x.T` on tensors of dimension other than 2",
     "`.T` reverses every axis; use `.transpose(-2, -1)` (or `.mT`) to swap the last two."),
    (r"bmm|batch1 must be a 3D tensor|3D tensor",
     "torch.bmm only takes 3-D tensors; `@` (torch.matmul) handles any number of batch axes."),
    (r"not divisible|divisible",
     "Check that d_model is divisible by num_heads before reshaping."),
]


def explain_error(error_type: str, message: str) -> str:
    """One sentence about an exception, or an empty string when none applies."""
    for pattern, hint in ERROR_HINTS:
        if re.search(pattern, message):
            return hint
    return ""


def mistake_message(exercise: str, mistake: str) -> str:
    """The sentence for a known mistake."""
    return MISTAKES[(exercise, mistake)]
