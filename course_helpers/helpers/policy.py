"""The static policy for exercises that forbid the built-in attention, shared by the visible check
and the grader.

Whether a forbidden built-in did the work must not rest on what the student's own process
reports: code can silence any recorder that runs beside it. So, before anything runs, the
grader takes the statements a graded exercise needs (`needed_statements`: its own definition,
and the definitions, imports and assignments of the names it uses, followed from name to name)
and refuses every way in them of reaching a name without writing it: `getattr` and friends,
`eval`/`exec`, frames and tracebacks, imports beyond the modules an answer may use, dunder and
private attributes of anything but a method's `self`, assignments to attributes of library
modules, and any name or string that mentions a forbidden built-in. A right answer never needs
any of them; what the exercise does not need (a scratch cell, a demo) is neither checked nor
run, and the sandbox's operator recorder stays the backstop for what runs.

The visible check (`helpers.checks`) runs the same `check_exercise` on the statements the
student's session ran, so a check that passes means this policy passes. Which statements those
are is `helpers.statements`'s job.
"""

from __future__ import annotations

import ast

from .i18n import _, listing
from .statements import needed_statements

ALLOWED_IMPORTS = (
    "math",
    "cmath",
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
    "sys",
    "time",
    "IPython.display",
    "pprint",
    "random",
    "statistics",
    "textwrap",
    "copy",
    "enum",
    "abc",
    "numbers",
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
    "get_ipython",
)
SELF_ONLY = ("getattr", "setattr")  # allowed on a method's `self` (a module's own layers), and only there
# A string that is exactly one of these names is a lookup waiting to happen.
LOOKUP_NAMES = (*(n for n in BANNED_CALLS if n not in ("open", "input", "memoryview")), "builtins", "import_module")
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
    # lookups by a computed name, and strings evaluated as code
    "attrgetter",
    "methodcaller",
    "get_type_hints",
    "ForwardRef",
    # the import system and the modules behind it (torch.sys.path, numpy.os, ...): a module file
    # the student's kernel wrote into the workspace must not be imported in its place
    "path",
    "sys",
    "os",
    "importlib",
    "subprocess",
    "ctypes",
    "gc",
    "inspect",
    "runpy",
    "pkgutil",
    "marshal",
    "pickle",
    # frames, tracebacks and tracing: the globals of any module, torch's own included
    "exc_info",
    "exception",
    "last_traceback",
    "last_value",
    "last_exc",
    "settrace",
    "setprofile",
    "gettrace",
    "getprofile",
    "call_tracing",
    "monitoring",
    "addaudithook",
    "meta_path",
    "path_hooks",
    "path_importer_cache",
    "tb_frame",
    "tb_next",
    "f_globals",
    "f_locals",
    "f_builtins",
    "f_back",
    "f_code",
    "gi_frame",
    "cr_frame",
    "ag_frame",
    # code run from a string
    "run_cell",
    "run_code",
    "run_line_magic",
    "run_cell_magic",
    "embed",
    "start_ipython",
    "start_kernel",
    "system",
    "getoutput",
    "popen",
)


def _allowed_import(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement brings in beyond those an answer may use."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name not in ALLOWED_IMPORTS]
    module = "." * node.level + (node.module or "")
    refused = []
    for alias in node.names:
        bad = alias.name == "*" or alias.name.startswith("_") or alias.name in BANNED_ATTRIBUTES
        if bad or not (module in ALLOWED_IMPORTS or f"{module}.{alias.name}" in ALLOWED_IMPORTS):
            refused.append(f"{module}.{alias.name}" if bad or module in ALLOWED_IMPORTS else module)
    return list(dict.fromkeys(refused))


# ----------------------------------------------------------------------------- the rules


def _self_name(stack: list[ast.AST], node: ast.AST) -> str | None:
    """The name a method calls its own object (its first parameter), seen from `node` inside the
    method's body, or None: outside methods, in a method's defaults and decorators (which run in
    the class body), and where a nested function or lambda takes a parameter of that name."""
    path = [*stack, node]
    shadowing: set[str] = set()
    for depth in range(len(path) - 2, -1, -1):
        here, child = path[depth], path[depth + 1]
        if isinstance(here, ast.ClassDef):
            return None
        if not isinstance(here, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        inside = child is here.body if isinstance(here, ast.Lambda) else child in here.body
        method = not isinstance(here, ast.Lambda) and depth > 0 and isinstance(path[depth - 1], ast.ClassDef)
        if method:
            static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in here.decorator_list)
            first = (here.args.posonlyargs + here.args.args)[:1]
            if not inside or static or not first or first[0].arg in shadowing:
                return None
            return first[0].arg
        if inside:
            args = here.args
            shadowing.update(a.arg for a in args.posonlyargs + args.args + args.kwonlyargs)
            shadowing.update(a.arg for a in (args.vararg, args.kwarg) if a)
    return None


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node


def _is_own(node: ast.AST, self_name: str | None) -> bool:
    """A method's `self`, or `super()` (the object the method belongs to)."""
    root = _root(node)
    return (isinstance(root, ast.Name) and self_name is not None and root.id == self_name) or (
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

    def _binds_self(self, node: ast.AST, name: str | None) -> None:
        """A name bound inside a method: rebinding its `self` would lend the exemption to anything."""
        if name is not None and name == _self_name(self.stack, node):
            self.say(_("assigning to {name}").format(name=name))

    def visit_Import(self, node):
        for module in _allowed_import(node):
            self.say(_("importing {module}").format(module=module))
        for alias in node.names:
            self._binds_self(node, alias.asname or alias.name.split(".")[0])
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        for module in _allowed_import(node):
            self.say(_("importing {module}").format(module=module))
        for alias in node.names:
            if self._mentions(alias.name):
                self.say(_("the built-in {name}").format(name=alias.name))
            self._binds_self(node, alias.asname or alias.name)
        self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id in SELF_ONLY:
            own = _self_name(self.stack, node)
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
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._binds_self(node, node.id)
        self.generic_visit(node)

    def visit_ExceptHandler(self, node):
        self._binds_self(node, node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node):
        self._binds_self(node, node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node):
        self._binds_self(node, node.name)
        self.generic_visit(node)

    def visit_MatchMapping(self, node):
        self._binds_self(node, node.rest)
        self.generic_visit(node)

    def visit_Attribute(self, node):
        name, own = node.attr, _is_own(node.value, _self_name(self.stack, node))
        if self._mentions(name):
            self.say(_("the built-in {name}").format(name=ast.unparse(node)))
        elif name.startswith("__") and name.endswith("__") and name != "__init__":
            self.say(_("the attribute {name}").format(name=name))
        elif name.startswith("_") and not own:
            self.say(_("the private attribute {name}").format(name=ast.unparse(node)))
        elif name in BANNED_CALLS and not own:
            self.say(_("{name}()").format(name=ast.unparse(node)))
        elif name in BANNED_ATTRIBUTES and not own:
            self.say(_("{name}").format(name=ast.unparse(node)))
        if isinstance(node.ctx, (ast.Store, ast.Del)) and not own:
            self.say(_("changing {name}").format(name=ast.unparse(node)))
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str) and node.value not in self.names:
            if self._mentions(node.value) or node.value.strip() in LOOKUP_NAMES:
                self.say(_("a string naming a built-in"))
        self.generic_visit(node)

    def visit_Global(self, node):
        self.say(_("global"))
        self.generic_visit(node)

    def visit_Nonlocal(self, node):
        for name in node.names:
            self._binds_self(node, name)
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


def check_exercise(
    statements: list[str], exercise: str, forbidden: tuple[str, ...], names: tuple[str, ...] = ()
) -> list[str]:
    """What the statements `exercise` needs do that its policy does not allow (empty: nothing)."""
    return violations(needed_statements(statements, [exercise]), forbidden, names)


def refusal(exercise: str, found: list[str]) -> str:
    """The one sentence a refused exercise gets, from the visible check and from the grader alike."""
    return _(
        "`{name}` may not rely on {what}: the grader gives it no marks without running it, so write "
        "attention yourself with tensor operations (matmul, softmax, masked_fill)."
    ).format(name=exercise, what=listing(found[:3]))
