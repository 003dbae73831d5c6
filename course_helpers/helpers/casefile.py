"""Read and write the file of test cases behind the visible checks (`check_cases.npz`).

The file holds plain arrays and one JSON index, and is read with `allow_pickle=False`: it
carries numbers, never code. The course's grading tools write it from the instructor's
solutions; the checks read it.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import torch

from .exercises import Case

CASES_FILE = Path(__file__).parent / "data" / "check_cases.npz"


def save_cases(cases: list[Case], path: str | Path = CASES_FILE) -> None:
    """Write cases, with their expected results and known mistakes, to an .npz file."""
    arrays: dict[str, np.ndarray] = {}
    index = []

    def put(key: str, tensor: torch.Tensor) -> str:
        arrays[key] = tensor.detach().cpu().numpy()
        return key

    for i, case in enumerate(cases):
        index.append(
            {
                "exercise": case.exercise,
                "name": case.name,
                "hidden": case.hidden,
                "params": case.params,
                "raises": case.raises,
                "tensors": {name: put(f"c{i}/in/{name}", t) for name, t in case.tensors.items()},
                "expected": [put(f"c{i}/out/{j}", t) for j, t in enumerate(case.expected)],
                "mistakes": {
                    m: [put(f"c{i}/m/{m}/{j}", t) for j, t in enumerate(results)]
                    for m, results in case.mistakes.items()
                },
            }
        )
    arrays["index"] = np.array(json.dumps(index))
    # Written member by member with a fixed date, so that the same cases give the same bytes.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for key in sorted(arrays):
            member = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            member.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(member, "w") as handle:
                np.lib.format.write_array(handle, arrays[key], allow_pickle=False)
    Path(path).write_bytes(buffer.getvalue())


def load_cases(path: str | Path = CASES_FILE) -> list[Case]:
    """Read every case of a case file."""
    with np.load(path, allow_pickle=False) as data:
        index = json.loads(str(data["index"]))

        def get(key: str) -> torch.Tensor:
            return torch.from_numpy(np.array(data[key]))

        return [
            Case(
                exercise=entry["exercise"],
                name=entry["name"],
                hidden=entry["hidden"],
                params=entry["params"],
                raises=entry["raises"],
                tensors={name: get(key) for name, key in entry["tensors"].items()},
                expected=tuple(get(key) for key in entry["expected"]),
                mistakes={m: tuple(get(k) for k in keys) for m, keys in entry["mistakes"].items()},
            )
            for entry in index
        ]
