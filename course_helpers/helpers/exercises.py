"""How an exercise is called on a test case, and what comes back.

A `Case` holds inputs (tensors and plain parameters) and, once judged, the expected results.
`run_case` calls a student's function or class the way its entry in `course.json` says
(`call`: "function", "module" or "torch_mha_converter") and records an `Outcome`: the results,
or the exception, plus any input that was modified. Judging the outcome is the job of
`checks.py`; this module computes nothing but the call itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from . import course
from .i18n import _, listing

PROJECTIONS = ("W_q", "W_k", "W_v", "W_o")


@dataclass
class Case:
    """One test input of an exercise, and what a right answer returns for it."""

    exercise: str
    name: str
    tensors: dict[str, torch.Tensor]
    params: dict = field(default_factory=dict)
    hidden: bool = False
    raises: str | None = None  # expected exception type, if any
    expected: tuple[torch.Tensor, ...] = ()  # right results
    mistakes: dict[str, tuple[torch.Tensor, ...]] = field(default_factory=dict)

    def describe_inputs(self) -> str:
        """The inputs as `q (2, 3), k (2, 4)` plus parameters."""
        parts = [
            f"{k} {tuple(v.shape)}" for k, v in self.tensors.items() if "." not in k
        ]  # module weights are named like W_q.weight
        parts += [f"{k}={v}" for k, v in self.params.items()]
        dtypes = {str(v.dtype).replace("torch.", "") for v in self.tensors.values() if v.is_floating_point()}
        return ", ".join(parts) + (f" ({', '.join(sorted(dtypes))})" if dtypes else "")


@dataclass
class Outcome:
    """What happened when a student's code ran on a case."""

    results: tuple | None = None  # the returned values, as returned
    error: tuple[str, str] | None = None  # (exception type name, message)
    problem: str | None = None  # a structural problem found before or after the call
    mistake: str | None = None  # a mistake recognised from the structure
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


def _value(case: Case, name: str):
    return case.tensors[name] if name in case.tensors else case.params[name]


def _arguments(spec: dict, case: Case) -> tuple[list, dict]:
    args = [_value(case, name) for name in spec.get("args", [])]
    kwargs = {name: case.tensors[name] for name in spec.get("optional", []) if name in case.tensors}
    return args, kwargs


def _results(spec: dict, result) -> tuple:
    outputs = spec["outputs"]
    if len(outputs) == 1:
        return (result,)
    if not isinstance(result, (tuple, list)) or len(result) != len(outputs):
        got = type(result).__name__ + (f" of length {len(result)}" if isinstance(result, (tuple, list)) else "")
        raise StructureProblem(
            _("It should return {count} results, ({names}); it returned a {got}.").format(
                count=len(outputs), names=listing(outputs), got=got
            )
        )
    return tuple(result)


def _call_function(spec: dict, fn, case: Case) -> tuple:
    args, kwargs = _arguments(spec, case)
    return _results(spec, fn(*args, **kwargs))


def _check_module_structure(module, params: dict) -> None:
    """The contract's attributes and submodules, each with its own message."""
    if not isinstance(module, nn.Module):
        raise StructureProblem(
            _("{name}(...) must create an nn.Module: subclass nn.Module and call super().__init__().").format(
                name=type(module).__name__
            )
        )
    d_model, bias = params["d_model"], params["bias"]
    for name in PROJECTIONS:
        layer = getattr(module, name, None)
        if not isinstance(layer, nn.Linear):
            raise StructureProblem(
                _("self.{name} should be nn.Linear(d_model, d_model, bias=bias); found {found}.").format(
                    name=name, found=type(layer).__name__
                )
            )
        if (layer.in_features, layer.out_features) != (d_model, d_model):
            raise StructureProblem(
                _("self.{name} maps {n_in} -> {n_out} features; it should map d_model -> d_model ({d} -> {d}).").format(
                    name=name, n_in=layer.in_features, n_out=layer.out_features, d=d_model
                )
            )
        if (layer.bias is not None) != bias:
            message = (
                _("self.{name} should have a bias, as bias=True asks.")
                if bias
                else _("self.{name} should have no bias, as bias=False asks.")
            )
            raise StructureProblem(message.format(name=name))
    for name, want in (("num_heads", params["num_heads"]), ("d_head", d_model // params["num_heads"])):
        if getattr(module, name, None) != want:
            raise StructureProblem(
                _("self.{name} should be {want}; found {found!r}.").format(
                    name=name, want=want, found=getattr(module, name, None)
                )
            )


def _call_module(spec: dict, cls, case: Case) -> tuple:
    init = [case.params[name] for name in spec["init"]]
    module = cls(*init)
    _check_module_structure(module, case.params)
    if not case.tensors:  # a case about the constructor alone (it should raise)
        return ()
    module = module.to(case.tensors[spec["args"][0]].dtype)
    load_projections(module, case.tensors)
    args, kwargs = _arguments(spec, case)
    return _results(spec, module(*args, **kwargs))


def _call_torch_mha_converter(spec: dict, fn, case: Case) -> tuple:
    p, t = case.params, case.tensors
    source = Projections(p["d_model"], p["num_heads"], bias=p["bias"]).to(t[spec["args"][0]].dtype)
    load_projections(source, t)
    converted = fn(source)
    if not isinstance(converted, nn.MultiheadAttention):
        raise StructureProblem(
            _("{name} should return an nn.MultiheadAttention; it returned {got}.").format(
                name=case.exercise, got=type(converted).__name__
            )
        )
    if not converted.batch_first:
        raise StructureProblem(_("The returned module has batch_first=False."), "batch_first_default")
    if converted.num_heads != p["num_heads"]:
        raise StructureProblem(
            _("The returned module has {got} heads; the original has {want}.").format(
                got=converted.num_heads, want=p["num_heads"]
            ),
            "one_head",
        )
    for name in PROJECTIONS:  # converting must not change the original
        for part in ("weight", "bias"):
            key = f"{name}.{part}"
            if key in t and not torch.equal(getattr(getattr(source, name), part), t[key]):
                raise StructureProblem(
                    _("{name} changed the original module's {key}; copy the weights, do not modify them.").format(
                        name=case.exercise, key=key
                    )
                )
    args, _kwargs = _arguments(spec, case)
    with torch.no_grad():
        out = converted(*args, need_weights=True, average_attn_weights=False)
    return _results(spec, out)


CALLS = {"function": _call_function, "module": _call_module, "torch_mha_converter": _call_torch_mha_converter}


def _clone_inputs(case: Case) -> Case:
    tensors = {k: v.clone() for k, v in case.tensors.items()}
    return Case(case.exercise, case.name, tensors, dict(case.params), case.hidden, case.raises)


def run_case(obj, case: Case, spec: dict | None = None) -> Outcome:
    """Call a student's function or class on a copy of the case's inputs and record what happens."""
    spec = spec or course.item(case.exercise)
    work = _clone_inputs(case)
    outcome = Outcome()
    try:
        outcome.results = CALLS[spec["call"]](spec, obj, work)
    except StructureProblem as problem:
        outcome.problem, outcome.mistake = str(problem), problem.mistake
    except Exception as exc:  # the student's exception is what we report
        outcome.error = (type(exc).__name__, str(exc))
    outcome.changed_inputs = [k for k, v in case.tensors.items() if k in work.tensors and not _same(work.tensors[k], v)]
    return outcome


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b))
