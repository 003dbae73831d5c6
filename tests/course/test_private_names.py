"""Every private name of another library that the course relies on, listed and checked.

A library may rename a private name in any release, silently: a renamed
`_async_handle_timeout` would turn a timed-out cell into "output stopped arriving". So:
- each name in PRIVATE must still exist where the course expects it (the failure names it);
- every private attribute the course's code reads from a library, and every private method
  the course's classes override in a library's class, must be in PRIVATE (a new use fails here
  until it is listed, with why the course needs it).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import textwrap
from pathlib import Path

import pytest

import attention_course
import helpers

REPO = Path(__file__).resolve().parents[2]
# "module:object.attribute" -> why the course uses it
PRIVATE = {
    "nbclient.client:NotebookClient._async_handle_timeout": "a cell interrupted at its time limit",
    "nbclient.client:NotebookClient._async_cleanup_kernel": "every zmq context destroyed after a notebook",
    "nbclient.client:NotebookClient._cleanup_kernel": "the blocking wrapper of the above (run_sync)",
    "jupyter_client.client:KernelClient._context_default": "a cap on the size of a kernel's messages",
    "traitlets:HasTraits()._trait_values": "a client's context read without making one",
    "torch.utils._python_dispatch:TorchDispatchMode": "the sandbox's record of built-in operators",
    "torch.utils._python_dispatch:TorchDispatchMode._should_skip_dynamo": "that recorder also under dynamo",
    "torch:Tensor._make_subclass": "a tensor subclass read as a plain tensor",
}
# Documented names that merely start with an underscore.
DOCUMENTED = {"_exit", "_asdict", "_replace", "_fields", "_getframe"}


def _resolve(spec: str):
    module, _, path = spec.partition(":")
    value = importlib.import_module(module)
    for part in path.split("."):
        if part.endswith("()"):
            value = getattr(value, part[:-2])
            value = type("Probe", (value,), {})() if isinstance(value, type) else value()
        else:
            value = getattr(value, part)
    return value


@pytest.mark.parametrize("spec", sorted(PRIVATE))
def test_every_private_name_the_course_relies_on_still_exists(spec):
    try:
        _resolve(spec)
    except (AttributeError, ImportError) as exc:
        pytest.fail(f"{spec} is gone ({exc}); the course uses it because {PRIVATE[spec]}")


def _course_sources() -> list[Path]:
    return sorted([*(REPO / "attention_course").rglob("*.py"), *(REPO / "course_helpers" / "helpers").rglob("*.py")])


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in DOCUMENTED


def test_every_private_name_read_from_a_library_is_listed():
    defined, used = set(), {}
    for path in _course_sources():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defined.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                defined.add(node.attr)
            elif isinstance(node, ast.arg):
                defined.add(node.arg)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                used.setdefault(node.attr, path.relative_to(REPO))
            elif isinstance(node, ast.ImportFrom) and node.module:
                for part in node.module.split("."):
                    if _private(part):
                        used.setdefault(part, path.relative_to(REPO))
    listed = {part for spec in PRIVATE for part in spec.replace(":", ".").replace("()", "").split(".")}
    unlisted = {name: str(where) for name, where in used.items() if name not in defined and name not in listed}
    assert not unlisted, f"private names of other libraries, not in PRIVATE: {unlisted}"


def _course_classes():
    for package in (attention_course, helpers):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith(("__main__", "nbgrader_cli", "lab")):
                continue
            try:
                module = importlib.import_module(info.name)
            except Exception:  # a module that needs what this process lacks is read by the AST test
                continue
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ == module.__name__:
                    yield cls


def _written_in_body(cls) -> set[str]:
    """The names a class's own body defines (methods and assignments), as written in its source."""
    try:
        body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    except (OSError, TypeError, SyntaxError):
        return set()
    names = {node.name for node in body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def test_every_private_method_overridden_in_a_library_class_is_listed():
    listed = {spec.rsplit(".", 1)[-1] for spec in PRIVATE}
    found = {}
    for cls in _course_classes():
        for name in _written_in_body(cls):
            if not _private(name):
                continue
            for base in cls.__mro__[1:]:
                own = base.__module__.split(".")[0] in ("attention_course", "helpers")
                if not own and name in vars(base):
                    found[f"{cls.__module__}.{cls.__qualname__}.{name}"] = f"{base.__module__}.{base.__qualname__}"
    unlisted = {where: base for where, base in found.items() if where.rsplit(".", 1)[-1] not in listed}
    assert not unlisted, f"private methods of other libraries overridden, not in PRIVATE: {unlisted}"
    assert any(k.endswith("_async_handle_timeout") for k in found), found  # the check sees overrides
