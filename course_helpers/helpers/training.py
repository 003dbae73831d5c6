"""The course's seeded training routine and the portable storage of trained weights.

`train` runs Adam (written out, `trained_heads.Adam`) on one thread from a seed, so a rebuild gives
the same weights on the same machine. Weights are stored as plain arrays in an `.npz` file (no
pickle); `digest` fingerprints them, and the build records it next to the code's own digest.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .trained_heads import Adam, one_thread

DATA = Path(__file__).parent / "data"


def train(model: nn.Module, loss_of_step: Callable[[int], torch.Tensor], steps: int, lr: float) -> list[float]:
    """`steps` Adam steps on `loss_of_step(step)` (which draws its own seeded batch); the losses."""
    optimiser = Adam(model.parameters(), lr=lr)
    losses = []
    with one_thread():
        for step in range(steps):
            loss = loss_of_step(step)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
    return losses


def to_arrays(models: dict[str, nn.Module]) -> dict[str, np.ndarray]:
    """Every model's state as float32 arrays named `model/parameter`."""
    return {
        f"{name}/{key}": value.detach().float().numpy()
        for name, model in models.items()
        for key, value in model.state_dict().items()
    }


def load_into(model: nn.Module, arrays, name: str) -> nn.Module:
    """Copy the arrays `name/...` into `model` (every parameter must be there); return the model."""
    prefix = name + "/"
    state = {k[len(prefix) :]: torch.from_numpy(np.asarray(arrays[k])) for k in arrays if k.startswith(prefix)}
    model.load_state_dict(state, strict=True)
    return model.float().eval()


def digest(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 of the arrays, in name order, independent of how the file was compressed."""
    h = hashlib.sha256()
    for key in sorted(arrays):
        h.update(key.encode())
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(arrays[key], dtype=np.float32), allow_pickle=False)
        h.update(buffer.getvalue())
    return h.hexdigest()


def save(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write the arrays as a compressed .npz (no pickled objects)."""
    np.savez_compressed(path, **arrays)


def load(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a stored .npz."""
    with np.load(path, allow_pickle=False) as stored:
        return {k: stored[k] for k in stored.files}
