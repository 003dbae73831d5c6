"""Train the course's small models and store their weights with the helpers' data: `make weights`.

1. the num_heads lab: one `TaskModel` (d_model 12) per head count, on the three-relation task;
2. the text model: a two-layer character transformer on Python's own documentation (`pydoc_data`).

Seeded, on one thread, in float32; a few minutes under `nice`. Writes `helpers/data/heads_lab.npz`,
`helpers/data/text_model.npz` and `helpers/data/weights.json`: the digest of each file's arrays,
the digest of the code and text that made them, and the first losses of each run, which
`tests/unit/authoring/test_stored_weights.py` retrains and compares.

    python -m attention_course.authoring.weights
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import torch

from helpers import relations_task as task
from helpers import text_corpus, tiny_models, training
from helpers.heads_lab import D_MODEL, divisors

HEADS_STEPS, HEADS_LR, HEADS_BATCH = 1500, 0.01, 64
TEXT_STEPS, TEXT_LR, TEXT_BATCH = 2500, 0.003, 32
CHECKED_STEPS = 5
SOURCES = [tiny_models, training, task, text_corpus]


def heads_lab_model(num_heads: int, steps: int = HEADS_STEPS) -> tuple[torch.nn.Module, list[float]]:
    """The lab's model with `num_heads` heads, trained from seed `num_heads`."""
    torch.manual_seed(num_heads)
    model = tiny_models.TaskModel(task.VOCAB, task.LENGTH, D_MODEL, num_heads, task.OUTPUTS)
    data = torch.Generator().manual_seed(1000 + num_heads)

    def step_loss(_step):
        seq = task.make_batch(HEADS_BATCH, data)
        return task.loss(model(seq, task.NO_SELF), seq)

    return model, training.train(model, step_loss, steps, HEADS_LR)


def text_model(steps: int = TEXT_STEPS) -> tuple[torch.nn.Module, list[float]]:
    """The character transformer, trained on random windows of the training topics."""
    torch.manual_seed(0)
    model = tiny_models.TextModel()
    ids = tiny_models.encode(text_corpus.training_text())
    data = torch.Generator().manual_seed(1)
    T = model.context

    def step_loss(_step):
        starts = torch.randint(0, len(ids) - T - 1, (TEXT_BATCH,), generator=data)
        window = torch.stack([ids[s : s + T + 1] for s in starts.tolist()])
        logits = model(window[:, :-1])
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), window[:, 1:].reshape(-1))

    return model, training.train(model, step_loss, steps, TEXT_LR)


def code_digest() -> str:
    """SHA-256 of the modules that define and train the models, and of this build."""
    h = hashlib.sha256()
    for module in [*SOURCES, __import__(__name__, fromlist=["_"])]:
        h.update(Path(module.__file__).read_bytes())
    return h.hexdigest()


def text_digest() -> str:
    """SHA-256 of the training text (it comes with Python, so it can change with Python's version)."""
    return hashlib.sha256(text_corpus.training_text().encode()).hexdigest()


def main() -> None:
    record = {"code": code_digest(), "text": text_digest(), "files": {}, "first_losses": {}, "seconds": {}}
    heads = {}
    start = time.perf_counter()
    for h in divisors(D_MODEL):
        heads[f"h{h}"], losses = heads_lab_model(h)
        record["first_losses"][f"h{h}"] = losses[:CHECKED_STEPS]
        print(f"heads lab, {h} heads: loss {losses[0]:.3f} -> {losses[-1]:.3f}", flush=True)
    record["seconds"]["heads_lab"] = round(time.perf_counter() - start, 1)
    start = time.perf_counter()
    text, losses = text_model()
    record["first_losses"]["text"] = losses[:CHECKED_STEPS]
    record["seconds"]["text_model"] = round(time.perf_counter() - start, 1)
    print(f"text model: loss {losses[0]:.3f} -> {sum(losses[-100:]) / 100:.3f}", flush=True)
    for name, models in (("heads_lab.npz", heads), ("text_model.npz", {"text": text})):
        arrays = training.to_arrays(models)
        training.save(training.DATA / name, arrays)
        record["files"][name] = training.digest(arrays)
    (training.DATA / "weights.json").write_text(json.dumps(record, indent=1) + "\n")
    print("wrote", ", ".join(record["files"]), "and weights.json in", training.DATA)


if __name__ == "__main__":
    main()
