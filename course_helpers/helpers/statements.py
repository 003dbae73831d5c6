"""Which statements a graded exercise needs, and where they come from.

`needed_statements` takes the statements of a notebook (or of a session) and keeps those an
exercise relies on: its own definition and the definitions, imports and assignments of the names
it uses, followed from name to name. `session_statements` finds the statements behind a student's
answer: the cells the IPython session ran, or, where no history holds them, rebuilt from the
objects. The policy (policy.py) is then checked on exactly these statements, by the visible check
and by the grader alike.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import symtable
import sys
import textwrap
import types
from dataclasses import dataclass, field

from .notebook_code import definition_statements


@dataclass
class _Statement:
    """One statement and the names it binds and reads."""

    source: str
    binds: set[str] = field(default_factory=set)  # names the statement gives a value
    early: set[str] = field(default_factory=set)  # names it reads while it runs (decorators, class bodies)
    late: set[str] = field(default_factory=set)  # names the functions it defines read when called


def _pieces(statement: str) -> list[str]:
    """A statement, with an import of several names split into one import per name (the same
    thing): `import time, os` needs `os` checked only where `os` is used."""
    try:
        tree = ast.parse(statement)
    except SyntaxError:
        return []
    pieces = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) and len(node.names) > 1:
            for alias in node.names:
                one = (
                    ast.Import([alias])
                    if isinstance(node, ast.Import)
                    else ast.ImportFrom(node.module, [alias], node.level)
                )
                pieces.append(ast.unparse(one))
        else:
            pieces.append(ast.unparse(node))
    return pieces


def _analyse(source: str) -> _Statement:
    """What a statement binds, what it reads as it runs, and what its functions read when called."""
    statement = _Statement(source)
    try:
        top = symtable.symtable(source, "<statement>", "exec")
    except SyntaxError:
        return statement

    def walk(table: symtable.SymbolTable, called: bool) -> None:
        module = table.get_type() == "module"
        for symbol in table.get_symbols():
            name = symbol.get_name()
            if module and symbol.is_local() and (symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace()):
                statement.binds.add(name)
            if not module and symbol.is_declared_global() and symbol.is_assigned():
                statement.binds.add(name)
            if symbol.is_referenced() and (module or symbol.is_global()):
                (statement.late if called else statement.early).add(name)
        for child in table.get_children():
            walk(child, called or child.get_type() == "function")

    walk(top, False)
    return statement


def needed_statements(statements: list[str], names: list[str] | tuple[str, ...]) -> list[str]:
    """The statements that `names` (the graded exercises) rely on, in their order: the last
    statement that defines each name, and, name by name, whatever those statements read (at
    definition time the last definition before them, when called the last one of all)."""
    parsed = [_analyse(piece) for statement in statements for piece in _pieces(statement)]

    def binding(name: str, before: int) -> int | None:
        return next((j for j in range(before - 1, -1, -1) if name in parsed[j].binds), None)

    wanted: set[int] = set()
    todo = [j for j in (binding(n, len(parsed)) for n in names) if j is not None]
    while todo:
        i = todo.pop()
        if i in wanted:
            continue
        wanted.add(i)
        todo += [j for n in parsed[i].early if (j := binding(n, i)) is not None]
        todo += [j for n in parsed[i].late if (j := binding(n, len(parsed))) is not None]
    return [parsed[i].source for i in sorted(wanted)]


def _history() -> list[str] | None:
    """The cells this IPython session ran, in order (None outside IPython)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    return list(history) if isinstance(history, list) else None


def _cell_statements(source: str) -> list[str]:
    """The statements of one cell that define or assign names (none when it does not parse)."""
    try:
        return definition_statements(source, assignments=True)
    except SyntaxError:
        return []


def _source(obj) -> str:
    """The source of a function or class; a class defined by `exec` (which `inspect` cannot
    find) is found by its name in the code its methods came from."""
    try:
        return textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError):
        pass
    if not inspect.isclass(obj):
        return ""
    for value in vars(obj).values():
        if isinstance(value, types.FunctionType):
            text = "".join(linecache.getlines(value.__code__.co_filename))
            try:
                tree = ast.parse(text)
            except SyntaxError:
                continue
            for node in tree.body:
                if isinstance(node, ast.ClassDef) and node.name == obj.__name__:
                    return ast.get_source_segment(text, node) or ""
    return ""


def _globals_of(obj) -> dict:
    """The namespace a function or class was defined in."""
    if isinstance(obj, types.FunctionType):
        return obj.__globals__
    functions = [v for v in vars(obj).values() if isinstance(v, types.FunctionType)] if inspect.isclass(obj) else []
    module = sys.modules.get(getattr(obj, "__module__", ""), None)
    return functions[0].__globals__ if functions else (vars(module) if module else {})


def source_statements(obj) -> list[str]:
    """What defines `obj` and the names it uses, rebuilt from the objects themselves (where no
    session history holds them): the source of each function and class, an import for each
    module, and `name = module.qualname` for anything else with a name."""
    found: dict[str, str] = {}
    home = _globals_of(obj)  # the namespace the answer was defined in: its helpers are there too

    def add(name: str, value, depth: int) -> None:
        if name in found or depth > 20:
            return
        if isinstance(value, types.ModuleType):
            module = value.__name__
            found[name] = f"import {module}" if module == name else f"import {module} as {name}"
            return
        own = (inspect.isfunction(value) or inspect.isclass(value)) and _globals_of(value) is home
        source = _source(value) if own else ""
        if source:
            found[name] = source
            scope = _globals_of(value)
            statement = _analyse(source)
            for other in sorted((statement.early | statement.late) - {name}):
                if other in scope:
                    add(other, scope[other], depth + 1)
        elif callable(value) and getattr(value, "__qualname__", None):
            found[name] = f"{name} = {getattr(value, '__module__', None) or 'builtins'}.{value.__qualname__}"

    add(getattr(obj, "__name__", "answer"), obj, 0)
    own = found.pop(getattr(obj, "__name__", "answer"), "")
    return [*found.values(), own]


def session_statements(name: str, obj) -> list[str]:
    """The statements behind `obj` as the student's session ran them: every cell of the IPython
    history, in order, when the history defines `name`; else rebuilt from the objects."""
    history = _history()
    if history:
        statements = [s for cell in history for s in _cell_statements(cell)]
        if any(name in _analyse(piece).binds for s in statements for piece in _pieces(s)):
            return statements
    return source_statements(obj)
