"""Using a student's own code from an earlier notebook in a later one (05's "try it" cells, 06
and 07): the definitions are read from that notebook's saved file; whatever cannot be used yet
(missing, not written, failing) is reported in one sentence that points back to the exercise,
never with a traceback.
"""

from __future__ import annotations

import torch

from .feedback import MissingImplementation, call_student
from .i18n import _


def _definitions_of(notebook: str, name: str):
    """`name` as defined in another notebook of the course, or None after one sentence saying why."""
    from .notebook_code import load_definitions

    try:
        namespace, _errors = load_definitions(notebook, names=(name,))
    except OSError:
        print(
            _("This cell uses your `{name}` from {notebook}, which was not found next to this notebook.").format(
                name=name, notebook=notebook
            )
        )
        return None
    if name not in namespace:
        print(
            _(
                "This cell uses your `{name}` from {notebook}, which does not define it yet: finish it in "
                "{notebook} (and save that notebook), then run this cell again."
            ).format(name=name, notebook=notebook)
        )
        return None
    return namespace[name]


def _unusable(name: str, notebook: str, exc: Exception) -> None:
    """One sentence about a definition from another notebook that fails when called."""
    if isinstance(exc, NotImplementedError):
        print(
            _(
                "This cell uses your `{name}` from {notebook}, which is not implemented yet: finish it in "
                "{notebook} (and save that notebook), then run this cell again."
            ).format(name=name, notebook=notebook)
        )
    else:
        print(
            _(
                "This cell uses your `{name}` from {notebook}, which raised {kind}: {text}. Its check in "
                "{notebook} says more."
            ).format(name=name, notebook=notebook, kind=type(exc).__name__, text=exc)
        )


def load_class(notebook: str, name: str, *args, probe: tuple = ()):
    """Build `name(*args)` from the definitions of another notebook, or say in one sentence why not.

    With `probe`, the new module is also called once on those inputs, so that a class whose
    forward is not written yet is caught here rather than in a later cell.
    """
    cls = _definitions_of(notebook, name)
    if cls is None:
        return None
    try:
        module = cls(*args)
        if probe:
            module(*probe)
        return module
    except Exception as exc:  # a demo points back to the exercise, never shows a traceback
        _unusable(name, notebook, exc)
    return None


def load_function(notebook: str, name: str, probe: tuple = ()):
    """A function defined in another notebook (called once on `probe` when given), or None after
    one sentence saying why it cannot be used yet."""
    fn = _definitions_of(notebook, name)
    if fn is None:
        return None
    if probe:
        try:
            fn(*probe)
        except Exception as exc:  # a demo points back to the exercise, never shows a traceback
            _unusable(name, notebook, exc)
            return None
    return fn


def pieces_from_earlier_notebooks():
    """Your split_heads (03), scaled_dot_product_attention (02) and concat_heads (04), read from
    those notebooks' saved files and tried once on a tiny input; each one that cannot be used yet
    is None, after one sentence saying why."""
    tiny = torch.zeros(1, 2, 4)
    return (
        load_function("03_split_heads.ipynb", "split_heads", probe=(tiny, 2)),
        load_function(
            "02_scaled_dot_product_attention.ipynb", "scaled_dot_product_attention", probe=(tiny, tiny, tiny)
        ),
        load_function("04_concat_heads.ipynb", "concat_heads", probe=(tiny.view(1, 2, 2, 2),)),
    )


def step(label: str, name: str, fn, *args, expect: tuple, meaning: str = ""):
    """Run one piece of a pipeline for a "try it" cell: print the shape it returns next to the shape
    it should return, and return its result (None, after one sentence, when it cannot run)."""
    if fn is None or any(a is None for a in args):
        print(_("{label}: skipped ({name} or an earlier step is not ready, see above)").format(label=label, name=name))
        return None
    try:
        result = call_student(name, fn, *args, then=_("run this cell again"))
    except MissingImplementation as missing:
        print(f"{label}: {missing}")
        return None
    tensor = result[0] if isinstance(result, (tuple, list)) and result else result
    shape = tuple(tensor.shape) if isinstance(tensor, torch.Tensor) else type(tensor).__name__
    right = shape == tuple(expect)
    print(
        f"{label}: {shape} "
        + (
            "✓ " + meaning
            if right
            else _("✗ expected {expect} {meaning}").format(expect=tuple(expect), meaning=meaning)
        ).rstrip()
    )
    return result if right else None
