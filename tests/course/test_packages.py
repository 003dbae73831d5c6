"""The course's code is one namespace, attention_course, with a subpackage per role, and its
dependencies go one way.

model (the course as grading needs it: manifest, cases, reference, expected results, catalogue) and
confinement need none of the others but the helpers; authoring (building the course) builds on
model; the sandbox's driver needs only the helpers it runs a student's code with; grading builds
on model, sandbox and confinement, never on authoring. Nothing imports the tests.
"""

from __future__ import annotations

import ast

import pytest

from conftest import REPO

PACKAGE = "attention_course"
ALLOWED = {
    "model": {"helpers"},
    "authoring": {"helpers", "model"},
    "confinement": set(),
    "sandbox": {"helpers"},
    "grading": {"helpers", "model", "sandbox", "confinement"},
}
TESTS = {"classroom", "conftest", "attacks", "browser", "class_hub", "bench", "tests", "tools"}


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return []


def course_imports(package: str, root=REPO) -> dict[str, set[str]]:
    """Each module of `package` (a subpackage of attention_course) and the course packages it
    imports anywhere in the module: helpers, a sibling subpackage, or a test module."""
    found = {}
    for path in sorted((root / PACKAGE / package).rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for name in _imported(node):
                parts = name.split(".")
                if parts[0] == PACKAGE and len(parts) > 1 and parts[1] in ALLOWED:
                    names.add(parts[1])
                elif parts[0] == PACKAGE and len(parts) > 1:
                    names.add(name)
                elif parts[0] in {"helpers", *TESTS}:
                    names.add(parts[0])
        found[path.relative_to(root / PACKAGE).as_posix()] = names - {package}
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_a_package_imports_only_the_packages_below_it(package):
    wrong = {module: names - ALLOWED[package] for module, names in course_imports(package).items()}
    assert not {m: n for m, n in wrong.items() if n}, f"{package} imports what it may not: {wrong}"


def test_every_python_file_of_the_course_is_in_one_of_the_packages():
    loose = [p.name for p in REPO.glob("*.py") if p.name != "nbgrader_config.py"]
    assert loose == [], "Python files at the top of the repository"
    tops = sorted(p.name for p in (REPO / PACKAGE).iterdir() if p.is_dir() and p.name != "__pycache__")
    assert tops == sorted(ALLOWED), "attention_course has a subpackage the rules above do not place"
    assert [p.name for p in (REPO / PACKAGE).glob("*.py")] == ["__init__.py"]
    assert all((REPO / PACKAGE / package / "__init__.py").exists() for package in ALLOWED)


def test_a_wrong_import_is_found_even_inside_a_function(tmp_path):
    (tmp_path / PACKAGE / "confinement").mkdir(parents=True)
    (tmp_path / PACKAGE / "confinement" / "policy.py").write_text(
        "def f():\n    from attention_course.grading.grade import main\n    from classroom import submission\n"
    )
    assert course_imports("confinement", tmp_path) == {"confinement/policy.py": {"grading", "classroom"}}


MAX_LINES = 400  # a module a maintainer reads in one sitting


def test_no_module_of_the_course_or_its_helpers_is_over_400_lines():
    modules = [*(REPO / PACKAGE).rglob("*.py"), *(REPO / "course_helpers" / "helpers").rglob("*.py")]
    long = {
        p.relative_to(REPO).as_posix(): n
        for p in modules
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}, f"split these by job: {long}"


def test_the_tests_mirror_the_packages():
    tests = REPO / "tests"
    units = sorted(p.name for p in (tests / "unit").iterdir() if p.is_dir() and p.name != "__pycache__")
    assert units == sorted([*ALLOWED, "helpers"]), "tests/unit/ has one folder per package"
    assert all(any((tests / "unit" / unit).glob("test_*.py")) for unit in units)
    loose = sorted(p.name for p in tests.glob("test_*.py"))
    assert loose == [], "a test file belongs in tests/unit/<package>/, tests/course/ or tests/e2e/"
    assert {p.parent.relative_to(tests).parts[0] for p in tests.rglob("test_*.py")} == {"unit", "course", "e2e"}


def _modules() -> dict[str, str]:
    """Every module of the course and its helpers (dotted name -> file name), packages' __init__ aside."""
    found = {}
    for top, prefix in ((REPO / PACKAGE, PACKAGE), (REPO / "course_helpers" / "helpers", "helpers")):
        for path in top.rglob("*.py"):
            if path.name not in ("__init__.py", "__main__.py") and "__pycache__" not in path.parts:
                found[".".join((prefix, *path.relative_to(top).with_suffix("").parts))] = path.stem
    return found


def test_every_module_has_unit_tests_that_need_no_kernel():
    """A module is covered when a file in tests/unit/ imports it, or is named after it (a script
    run as a program, like nbgrader_cli.py); tests/unit/ is what `make test-fast` runs."""
    imported, names = set(), set()
    for path in (REPO / "tests" / "unit").rglob("test_*.py"):
        names.add(path.stem)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    bare = sorted(m for m, stem in _modules().items() if m not in imported and f"test_{stem}" not in names)
    assert bare == [], f"modules without a unit test in tests/unit/: {bare}"


def test_no_two_test_files_share_a_name():
    """pytest imports test files by their name: two of the same name in different folders fail collection."""
    seen: dict[str, list[str]] = {}
    for path in (REPO / "tests").rglob("test_*.py"):
        seen.setdefault(path.name, []).append(path.relative_to(REPO).as_posix())
    assert {n: p for n, p in seen.items() if len(p) > 1} == {}
