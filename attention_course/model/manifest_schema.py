"""The shape of `course.toml`, as a JSON Schema: every table, its keys and their types.

`manifest.load` validates the file against it before reading anything, so a typo such as
`hiden = true` or `points = "2"` stops the build with the key's place in the file instead of
being ignored. The comment at the top of course.toml explains what each key means.
"""

from __future__ import annotations

import difflib

import jsonschema

_STR = {"type": "string"}
_STRS = {"type": "array", "items": _STR}
_OPTIONS = {"type": "object", "additionalProperties": _STR, "minProperties": 2}


def _table(properties: dict, required: tuple[str, ...] = ()) -> dict:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


_SHAPE = {"type": "array", "items": {"type": "integer", "minimum": 0}}
_INPUT = {
    "oneOf": [
        _SHAPE,
        _STR,  # the same values as another input
        _table({"shape": _SHAPE, "scale": {"type": "number"}}, ("shape",)),
    ]
}
_CASE = _table(
    {
        "name": _STR,
        "inputs": {"type": "object", "additionalProperties": _INPUT},
        "mask": {
            "oneOf": [
                _table({"causal": {"type": "integer", "minimum": 1}}, ("causal",)),
                _table({"random": _SHAPE}, ("random",)),
            ]
        },
        "params": {"type": "object", "additionalProperties": {"type": ["integer", "boolean", "number", "string"]}},
        "dtype": {"enum": ["float32", "float64"]},
        "hidden": {"type": "boolean"},
        "raises": _STR,
    },
    ("name",),
)
_MISTAKE = _table(
    {
        "name": _STR,
        "sentence": _STR,
        "edits": {"type": "array", "items": {"type": "array", "items": _STR, "minItems": 2, "maxItems": 2}},
    },
    ("name", "sentence"),
)
_ITEM = _table(
    {
        "name": _STR,
        "kind": {"enum": ["function", "class", "choice", "numeric"]},
        "notebook": _STR,
        "answer_cell": _STR,
        "test_cell": _STR,
        "points": {"type": "number", "exclusiveMinimum": 0},
        # exercises
        "call": {"enum": ["function", "module", "torch_mha_converter"]},
        "args": _STRS,
        "optional": _STRS,
        "init": _STRS,
        "outputs": _STRS,
        "masked_output": _STR,
        "forbid_builtins": {"type": "boolean"},
        "cases_like": _STR,
        "cases": {"type": "array", "items": _CASE},
        "mistakes": {"type": "array", "items": _MISTAKE},
        "alternatives": {"type": "array", "items": _table({"source": _STR}, ("source",))},
        # questions
        "variable": _STR,
        "answer": _STR,
        "question": _STR,
        "options": _OPTIONS,
        "explain": _OPTIONS,
        # numeric questions (never released: the grader alone reads value, tolerances and wrong)
        "unit": _STR,
        "value": {"type": "number"},
        "rel_tol": {"type": "number", "minimum": 0},
        "abs_tol": {"type": "number", "minimum": 0},
        "reasoning": _STR,
        "wrong": {"type": "array", "items": _STR, "minItems": 1},
    },
    ("name", "kind", "notebook", "answer_cell", "test_cell", "points"),
)
_PRACTICE = _table(
    {"name": _STR, "notebook": _STR, "question": _STR, "answer": _STR, "options": _OPTIONS, "explain": _OPTIONS},
    ("name", "notebook", "question", "answer", "options", "explain"),
)
SCHEMA = _table(
    {
        "course": _table(
            {
                "assignment": _STR,
                "source": _STR,
                "release": _STR,
                "case_seed": {"type": "integer"},
                "notebooks": {**_STRS, "minItems": 1},
                "forbidden": _STRS,
            },
            ("assignment", "case_seed", "notebooks"),
        ),
        "editions": {
            "type": "object",
            "additionalProperties": _table(
                {"assignment": _STR, "language": _STR, "lab_locale": _STR, "fonts": _STRS, "code_stub": _STR},
                ("assignment", "language"),
            ),
        },
        "items": {"type": "array", "items": _ITEM},
        "practice": {"type": "array", "items": _PRACTICE},
    },
    ("course",),
)


def _place(data: dict, path) -> str:
    """`items[3] (split_heads) > cases[2] (one head)`: where in the file an error is."""
    parts, node = [], data
    for key in path:
        node = node[key]
        if isinstance(key, int):
            name = node.get("name") if isinstance(node, dict) else None
            parts[-1] += f"[{key}]" + (f" ({name})" if name else "")
        else:
            parts.append(str(key))
    return " > ".join(parts) or "the top level"


def _sentence(data: dict, error: jsonschema.ValidationError) -> str:
    where = _place(data, error.absolute_path)
    if error.validator == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(known))
        close = [m for key in unknown for m in difflib.get_close_matches(key, known, n=1)]
        hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
        return f"{where}: unknown key {', '.join(repr(k) for k in unknown)}{hint}"
    return f"{where}: {error.message}"


def validate(data: dict, filename: str = "course.toml") -> None:
    """Raise ValueError naming every place where `data` does not have the manifest's shape."""
    errors = sorted(jsonschema.Draft202012Validator(SCHEMA).iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        raise ValueError(
            f"{filename} does not have the manifest's shape:\n" + "\n".join("  " + _sentence(data, e) for e in errors)
        )
