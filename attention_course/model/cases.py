"""Test cases of every exercise, drawn from the case specs of the manifest.

Each exercise draws its cases from a random stream of its own (`Course.item_seed`), so adding or
changing one exercise never changes another's numbers. The checks' case file uses the course's
fixed seed; the trusted grader draws fresh values from a grading seed, with the same shapes.
"""

from __future__ import annotations

import torch

from helpers.exercises import PROJECTIONS, Case

from .manifest import Course, Item

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def _normal(gen: torch.Generator, shape, dtype: torch.dtype, scale: float = 1.0) -> torch.Tensor:
    return (torch.randn(*shape, generator=gen, dtype=torch.float64) * scale).to(dtype)


def random_mask(gen: torch.Generator, shape) -> torch.Tensor:
    """A boolean mask with at least one True in every row (along the last axis)."""
    shape = tuple(shape)
    mask = torch.rand(*shape, generator=gen) > 0.5
    keep = torch.randint(shape[-1], shape[:-1] + (1,), generator=gen)
    return mask.scatter(-1, keep, True)


def causal_mask(t: int) -> torch.Tensor:
    """True on and below the diagonal: position i may attend to positions 0..i."""
    return torch.ones(t, t, dtype=torch.bool).tril()


def projection_weights(gen: torch.Generator, d_model: int, bias: bool, dtype: torch.dtype) -> dict:
    """Random weights (and biases) for W_q, W_k, W_v, W_o, named like a state dict."""
    tensors = {}
    for name in PROJECTIONS:
        tensors[f"{name}.weight"] = _normal(gen, (d_model, d_model), dtype, d_model**-0.5)
        if bias:
            tensors[f"{name}.bias"] = _normal(gen, (d_model,), dtype, 0.5)
    return tensors


def make_case(item: Item, spec: dict, gen: torch.Generator) -> Case:
    """One case of an item from its spec in the manifest (see the comment at the top of course.toml)."""
    dtype = DTYPES[spec.get("dtype", "float32")]
    tensors: dict[str, torch.Tensor] = {}
    for name, value in spec.get("inputs", {}).items():
        if isinstance(value, str):
            tensors[name] = tensors[value].clone()
        elif isinstance(value, dict):
            tensors[name] = _normal(gen, value["shape"], dtype, value.get("scale", 1.0))
        else:
            tensors[name] = _normal(gen, value, dtype)
    mask = spec.get("mask")
    if mask is not None:
        tensors["mask"] = causal_mask(mask["causal"]) if "causal" in mask else random_mask(gen, mask["random"])
    params = dict(spec.get("params", {}))
    if item.spec.get("call") in ("module", "torch_mha_converter") and tensors:
        tensors.update(projection_weights(gen, params["d_model"], params["bias"], dtype))
    return Case(item.name, spec["name"], tensors, params, hidden=bool(spec.get("hidden")), raises=spec.get("raises"))


def item_cases(course: Course, item: Item, seed: int | None = None) -> list[Case]:
    """Every case of one exercise, in manifest order, from the item's own stream."""
    gen = torch.Generator().manual_seed(course.item_seed(item.name, seed))
    return [make_case(item, spec, gen) for spec in item.spec.get("cases", [])]


def all_cases(course: Course, seed: int | None = None) -> list[Case]:
    """Every case of every exercise (the course's case seed unless `seed` is given)."""
    return [case for item in course.exercises() for case in item_cases(course, item, seed)]


def features(case: Case) -> set[tuple]:
    """The kinds of input a case shows: dtypes, numbers of axes (five or more counted as four),
    the mask's number of axes, large values, a raised exception, boolean parameters.

    A hidden case may only show kinds that some visible case of its exercise shows too."""
    found = set()
    for name, tensor in case.tensors.items():
        if "." in name:
            continue
        if tensor.dtype == torch.bool:
            found.add((name, "axes", tensor.dim()))
        else:
            found |= {(name, "axes", min(tensor.dim(), 4)), ("dtype", str(tensor.dtype)[6:])}
            if tensor.abs().max() > 8:
                found.add(("large values",))
    if case.raises:
        found.add(("raises", case.raises))
    found |= {(k, v) for k, v in case.params.items() if isinstance(v, bool)}
    return found
