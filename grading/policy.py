"""The static policy for exercises that forbid the built-in attention.

Whether a forbidden built-in did the work must not rest on what the student's own process
reports: code can silence any recorder that runs beside it. So the grader reads the exact
definitions the sandbox will run for such a notebook (taken from it with `ast`) and refuses,
before anything runs, every way of reaching a name without writing it: `getattr` and friends,
`eval`/`exec`, imports beyond the handful attention needs, dunder and private attributes of
anything but `self`, assignments to attributes of library modules, and any name or string
that mentions a forbidden built-in. A right answer never needs any of them.
"""

from __future__ import annotations

import ast

from helpers.i18n import _

ALLOWED_IMPORTS = (
    "math",
    "torch",
    "torch.nn",
    "torch.nn.functional",
    "torch.nn.init",
    "numpy",
    "typing",
    "warnings",
    "functools",
    "itertools",
    "collections",
    "dataclasses",
    "__future__",
)
BANNED_CALLS = (
    "getattr",
    "setattr",
    "delattr",
    "eval",
    "exec",
    "compile",
    "__import__",
    "globals",
    "locals",
    "vars",
    "open",
    "breakpoint",
    "input",
    "memoryview",
    "__builtins__",
)
SELF_ONLY = ("getattr", "setattr")  # allowed on `self` (a module's own layers), and only there
BANNED_ATTRIBUTES = (
    "jit",
    "compile",
    "library",
    "ops",
    "fx",
    "hub",
    "utils",
    "package",
    "overrides",
    "export",
    "classes",
    "modules",
    "import_module",
    "builtins",
)


def allowed_import(statement: str) -> bool:
    """An import statement of only the modules attention needs (a course cell's imports that may
    stay next to an answer that must not use the built-ins)."""
    try:
        tree = ast.parse(statement)
    except SyntaxError:
        return False
    node = tree.body[0] if len(tree.body) == 1 else None
    if isinstance(node, ast.Import):
        return all(alias.name in ALLOWED_IMPORTS for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return (node.module or "") in ALLOWED_IMPORTS and not any(
            a.name == "*" or a.name.startswith("_") or a.name in BANNED_ATTRIBUTES for a in node.names
        )
    return False


def _self_name(stack: list[ast.AST]) -> str | None:
    """The first parameter of the innermost function (a method's `self`), if any."""
    for node in reversed(stack):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args.posonlyargs + node.args.args
            return args[0].arg if args else None
    return None


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node


def _is_own(node: ast.AST, self_name: str | None) -> bool:
    """`self` or `super()` (the object the method belongs to)."""
    root = _root(node)
    return (isinstance(root, ast.Name) and root.id == self_name) or (
        isinstance(root, ast.Call) and isinstance(root.func, ast.Name) and root.func.id == "super"
    )


class _Reader(ast.NodeVisitor):
    def __init__(self, forbidden: tuple[str, ...], names: tuple[str, ...] = ()):
        self.forbidden = forbidden
        self.names = names  # the course's own exercise names: a string equal to one is not a built-in
        self.found: list[str] = []
        self.stack: list[ast.AST] = []
        self.allowed: set[int] = set()  # getattr/setattr nodes called on self

    def say(self, text: str) -> None:
        if text not in self.found:
            self.found.append(text)

    def generic_visit(self, node):
        self.stack.append(node)
        super().generic_visit(node)
        self.stack.pop()

    def _mentions(self, text: str) -> bool:
        return any(name in text for name in self.forbidden)

    def visit_Import(self, node):
        for alias in node.names:
            if alias.name not in ALLOWED_IMPORTS:
                self.say(_("importing {module}").format(module=alias.name))
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        module = node.module or ""
        if module not in ALLOWED_IMPORTS:
            self.say(_("importing {module}").format(module=module))
        for alias in node.names:
            if alias.name == "*" or alias.name.startswith("_") or alias.name in BANNED_ATTRIBUTES:
                self.say(_("importing {module}").format(module=f"{module}.{alias.name}"))
            if self._mentions(alias.name):
                self.say(_("the built-in {name}").format(name=alias.name))
        self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id in SELF_ONLY:
            own = _self_name(self.stack)
            target = node.args[0] if node.args else None
            if own and isinstance(target, ast.Name) and target.id == own:
                self.allowed.add(id(node.func))
        self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in BANNED_CALLS and id(node) not in self.allowed:
            self.say(
                _("{name}()").format(name=node.id)
                if node.id not in SELF_ONLY
                else _("{name}() on anything but self").format(name=node.id)
            )
        if node.id not in self.names and self._mentions(node.id):
            self.say(_("the built-in {name}").format(name=node.id))
        if isinstance(node.ctx, ast.Store) and node.id == _self_name(self.stack):
            self.say(_("assigning to {name}").format(name=node.id))
        self.generic_visit(node)

    def visit_Attribute(self, node):
        name, own = node.attr, _is_own(node.value, _self_name(self.stack))
        if self._mentions(name):
            self.say(_("the built-in {name}").format(name=ast.unparse(node)))
        elif name.startswith("__") and name.endswith("__") and name != "__init__":
            self.say(_("the attribute {name}").format(name=name))
        elif name.startswith("_") and not own:
            self.say(_("the private attribute {name}").format(name=ast.unparse(node)))
        elif name in BANNED_ATTRIBUTES and not own:
            self.say(_("{name}").format(name=ast.unparse(node)))
        if isinstance(node.ctx, (ast.Store, ast.Del)) and not own:
            self.say(_("changing {name}").format(name=ast.unparse(node)))
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str) and node.value not in self.names and self._mentions(node.value):
            self.say(_("a string naming a built-in"))
        self.generic_visit(node)

    def visit_Global(self, node):
        self.say(_("global"))
        self.generic_visit(node)


def _docstrings(tree: ast.AST) -> set[int]:
    return {
        id(body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and (body := node.body)
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
    }


def violations(statements: list[str], forbidden: tuple[str, ...], names: tuple[str, ...] = ()) -> list[str]:
    """What the statements do that an exercise forbidding built-ins does not allow (empty: nothing).
    `names`: the course's exercise names, which a string may hold (`demos.attempt("name", ...)`)."""
    reader = _Reader(tuple(forbidden), tuple(names))
    for statement in statements:
        try:
            tree = ast.parse(statement)
        except SyntaxError:
            continue
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if id(node) in skip and isinstance(node, ast.Constant):
                node.value = ""  # a docstring may name the built-in it does not use
        reader.visit(tree)
    return reader.found


def refusal(exercise: str, found: list[str]) -> str:
    """The one sentence a refused submission gets."""
    return _(
        "`{name}` is graded without running it: in this exercise code may not use {what}; write attention "
        "with tensor operations (matmul, softmax, masked_fill) instead."
    ).format(name=exercise, what=", ".join(found[:3]))
