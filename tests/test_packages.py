"""The course's packages by role, and the one way their dependencies go.

authoring (building the course) and confinement need none of the others; the sandbox's driver
needs only the helpers it runs a student's code with; grading builds on all three. No package
imports the development tools or the tests.
"""

from __future__ import annotations

import ast

import pytest
from conftest import REPO

ALLOWED = {
    "authoring": {"helpers"},
    "confinement": set(),
    "sandbox": {"helpers"},
    "grading": {"helpers", "authoring", "sandbox", "confinement"},
}
OURS = {*ALLOWED, "helpers", "tools", "tests", "conftest"}


def course_imports(package: str, root=REPO) -> dict[str, set[str]]:
    """Each module of `package` and the course packages it imports (anywhere in the module)."""
    found = {}
    for path in sorted((root / package).glob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        found[path.name] = (names & OURS) - {package}
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_a_package_imports_only_the_packages_below_it(package):
    wrong = {module: names - ALLOWED[package] for module, names in course_imports(package).items()}
    assert not {m: n for m, n in wrong.items() if n}, f"{package} imports what it may not: {wrong}"


def test_every_python_file_of_the_course_is_in_one_of_the_packages():
    loose = [p.name for p in REPO.glob("*.py") if p.name != "nbgrader_config.py"]
    assert loose == [] and (REPO / "grading" / "__init__.py").exists()
    assert all((REPO / package / "__init__.py").exists() for package in ALLOWED)


def test_a_wrong_import_is_found_even_inside_a_function(tmp_path):
    (tmp_path / "confinement").mkdir()
    (tmp_path / "confinement" / "policy.py").write_text("def f():\n    from grading.grade import main\n")
    assert course_imports("confinement", tmp_path) == {"policy.py": {"grading"}}
