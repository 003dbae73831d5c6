"""The graded exercises: how each one is called on a test case, and what comes back.

A `Case` holds inputs (tensors and plain parameters) and, once judged, the expected results.
`run_case` calls a student's function or class on a case and records an `Outcome`: the
results, or the exception, plus any input that was modified. Judging the outcome is the job
of `checks.py`; this module computes nothing but the call itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

PROJECTIONS = ("W_q", "W_k", "W_v", "W_o")


@dataclass
class Case:
    """One test input of an exercise, and what a right answer returns for it."""
    exercise: str
    name: str
    tensors: dict[str, torch.Tensor]
    params: dict = field(default_factory=dict)
    hidden: bool = False
    raises: str | None = None                      # expected exception type, if any
    expected: tuple[torch.Tensor, ...] = ()        # right results
    mistakes: dict[str, tuple[torch.Tensor, ...]] = field(default_factory=dict)

    def describe_inputs(self) -> str:
        """The inputs as `q (2, 3), k (2, 4)` plus parameters."""
        parts = [f"{k} {tuple(v.shape)}" for k, v in self.tensors.items()
                 if "." not in k]  # module weights are named like W_q.weight
        parts += [f"{k}={v}" for k, v in self.params.items()]
        dtypes = {str(v.dtype).replace("torch.", "") for v in self.tensors.values() if v.is_floating_point()}
        return ", ".join(parts) + (f" ({', '.join(sorted(dtypes))})" if dtypes else "")


@dataclass
class Outcome:
    """What happened when a student's code ran on a case."""
    results: tuple | None = None          # the returned values, as returned
    error: tuple[str, str] | None = None  # (exception type name, message)
    problem: str | None = None            # a structural problem found before or after the call
    mistake: str | None = None            # a mistake recognised from the structure
    changed_inputs: list[str] = field(default_factory=list)


class StructureProblem(Exception):
    """The student's object does not have the form the contract asks for."""

    def __init__(self, message: str, mistake: str | None = None):
        super().__init__(message)
        self.mistake = mistake


class Projections(nn.Module):
    """A module exposing W_q, W_k, W_v, W_o and num_heads, as `to_torch_mha` expects."""

    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        for name in PROJECTIONS:
            setattr(self, name, nn.Linear(d_model, d_model, bias=bias))


def load_projections(module: nn.Module, tensors: dict[str, torch.Tensor]) -> None:
    """Copy `W_q.weight`, `W_q.bias`, ... from `tensors` into a module's projections."""
    with torch.no_grad():
        for name in PROJECTIONS:
            layer = getattr(module, name)
            layer.weight.copy_(tensors[f"{name}.weight"])
            if f"{name}.bias" in tensors:
                layer.bias.copy_(tensors[f"{name}.bias"])


def _mask_kwargs(tensors: dict) -> dict:
    return {"mask": tensors["mask"]} if "mask" in tensors else {}


def _call_pair_scores(fn, case: Case):
    return (fn(case.tensors["q"], case.tensors["k"]),)


def _call_sdpa(fn, case: Case):
    t = case.tensors
    return _as_pair(fn(t["q"], t["k"], t["v"], **_mask_kwargs(t)), "(output, weights)")


def _call_split_heads(fn, case: Case):
    return (fn(case.tensors["x"], case.params["num_heads"]),)


def _call_concat_heads(fn, case: Case):
    return (fn(case.tensors["x"]),)


def _check_mha_structure(module, params: dict) -> None:
    """The contract's attributes and submodules, each with its own message."""
    if not isinstance(module, nn.Module):
        raise StructureProblem("MultiHeadAttention(...) must create an nn.Module: "
                               "subclass nn.Module and call super().__init__().")
    d_model, bias = params["d_model"], params["bias"]
    for name in PROJECTIONS:
        layer = getattr(module, name, None)
        if not isinstance(layer, nn.Linear):
            raise StructureProblem(f"self.{name} should be nn.Linear(d_model, d_model, bias=bias); "
                                   f"found {type(layer).__name__}.")
        if (layer.in_features, layer.out_features) != (d_model, d_model):
            raise StructureProblem(f"self.{name} maps {layer.in_features} -> {layer.out_features} "
                                   f"features; it should map d_model -> d_model ({d_model} -> {d_model}).")
        if (layer.bias is not None) != bias:
            raise StructureProblem(f"self.{name} should {'have' if bias else 'have no'} bias, "
                                   f"as MultiHeadAttention(..., bias={bias}) asks.")
    for name, want in (("num_heads", params["num_heads"]), ("d_head", d_model // params["num_heads"])):
        if getattr(module, name, None) != want:
            raise StructureProblem(f"self.{name} should be {want}; found {getattr(module, name, None)!r}.")


def _call_mha(cls, case: Case):
    p, t = case.params, case.tensors
    module = cls(p["d_model"], p["num_heads"], bias=p["bias"])
    _check_mha_structure(module, p)
    module = module.to(t["query"].dtype)
    load_projections(module, t)
    return _as_pair(module(t["query"], t["key"], t["value"], **_mask_kwargs(t)), "(output, weights)")


def _call_to_torch_mha(fn, case: Case):
    p, t = case.params, case.tensors
    source = Projections(p["d_model"], p["num_heads"], bias=p["bias"]).to(t["query"].dtype)
    load_projections(source, t)
    converted = fn(source)
    if not isinstance(converted, nn.MultiheadAttention):
        raise StructureProblem(f"to_torch_mha should return an nn.MultiheadAttention; "
                               f"it returned {type(converted).__name__}.")
    if not converted.batch_first:
        raise StructureProblem("The returned module has batch_first=False.", "batch_first_default")
    if converted.num_heads != p["num_heads"]:
        raise StructureProblem(f"The returned module has {converted.num_heads} heads; "
                               f"the original has {p['num_heads']}.", "one_head")
    for name in PROJECTIONS:  # converting must not change the original
        for part in ("weight", "bias"):
            key = f"{name}.{part}"
            if key in t and not torch.equal(getattr(getattr(source, name), part), t[key]):
                raise StructureProblem(f"to_torch_mha changed the original module's {key}; "
                                       "copy the weights, do not modify them.")
    with torch.no_grad():
        out = converted(t["query"], t["key"], t["value"], need_weights=True, average_attn_weights=False)
    return _as_pair(out, "(output, weights)")


def _as_pair(result, what: str) -> tuple:
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        got = f"a {type(result).__name__}" + (f" of length {len(result)}" if isinstance(result, (tuple, list)) else "")
        raise StructureProblem(f"It should return two results, {what}; it returned {got}.")
    return tuple(result)


@dataclass(frozen=True)
class Exercise:
    """A graded exercise of the contract."""
    name: str
    notebook: str
    outputs: tuple[str, ...]
    call: object
    is_class: bool = False
    masked_output: int | None = None   # index of the result whose masked entries must be 0
    forbidden: tuple[str, ...] = ()    # built-ins that must not do the work


FORBIDDEN_ATTENTION = ("scaled_dot_product_attention", "multi_head_attention_forward",
                       "MultiheadAttention", "_native_multi_head_attention")

EXERCISES: dict[str, Exercise] = {e.name: e for e in [
    Exercise("raw_scores", "01_scaling_problem", ("scores",), _call_pair_scores),
    Exercise("scaled_scores", "01_scaling_problem", ("scores",), _call_pair_scores),
    Exercise("scaled_dot_product_attention", "02_scaled_dot_product_attention",
             ("output", "weights"), _call_sdpa, masked_output=1, forbidden=FORBIDDEN_ATTENTION),
    Exercise("split_heads", "03_split_heads", ("heads",), _call_split_heads),
    Exercise("concat_heads", "04_concat_heads", ("merged",), _call_concat_heads),
    Exercise("MultiHeadAttention", "05_output_projection", ("output", "weights"), _call_mha,
             is_class=True, masked_output=1, forbidden=FORBIDDEN_ATTENTION),
    Exercise("to_torch_mha", "06_nn_multiheadattention", ("output", "weights"), _call_to_torch_mha),
]}


def _clone_inputs(case: Case) -> Case:
    tensors = {k: v.clone() for k, v in case.tensors.items()}
    return Case(case.exercise, case.name, tensors, dict(case.params), case.hidden, case.raises)


def run_case(obj, case: Case) -> Outcome:
    """Call a student's function or class on a copy of the case's inputs and record what happens."""
    exercise = EXERCISES[case.exercise]
    work = _clone_inputs(case)
    outcome = Outcome()
    try:
        outcome.results = exercise.call(obj, work)
    except StructureProblem as problem:
        outcome.problem, outcome.mistake = str(problem), problem.mistake
    except Exception as exc:  # the student's exception is what we report
        outcome.error = (type(exc).__name__, str(exc))
    outcome.changed_inputs = [k for k, v in case.tensors.items()
                              if k in work.tensors and not _same(work.tensors[k], v)]
    return outcome


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b))
