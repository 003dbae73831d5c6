"""Solutions never one click away: every link a student is given (the Binder badges, both READMEs'
students' parts, the student folder's READMEs) opens the student repository, built from
`make student-folder`, never a tree that holds source/ (this instructor repository)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import pytest

from attention_course.authoring import student_folder
from attention_course.model.manifest import load
from conftest import REPO

LINK = re.compile(r"\]\(([^)\s]+)\)|href=\"([^\"]+)\"")


def repositories() -> dict[str, str]:
    """role -> owner/name, from the README's <!-- repositories: ... --> line."""
    match = re.search(r"<!-- repositories: (.*?) \(", (REPO / "README.md").read_text())
    assert match, "README.md does not name its instructor and student repositories"
    return dict(part.split("=") for part in match.group(1).split())


def student_facing() -> dict[str, str]:
    """Where a student reads, and its text."""
    en, zh = (REPO / "README.md").read_text(), (REPO / "README.zh-CN.md").read_text()
    texts = {
        "README.md (above For teachers)": en[: en.index("## For teachers")],
        "README.zh-CN.md (above 给老师与贡献者)": zh[: zh.index("## 给老师与贡献者")],
    }
    course = load(REPO)
    for language in ("en", "zh-CN"):
        texts[f"student folder README ({language})"] = student_folder._readme(course, language) or ""
    return texts


def repository_of(url: str) -> str | None:
    """owner/name of a GitHub repository a link opens (directly, through Binder or nbgitpuller)."""
    parsed = urlparse(url)
    if parsed.netloc == "mybinder.org":
        parts = parsed.path.split("/")  # /v2/gh/owner/name/ref
        return "/".join(parts[3:5]) if parts[2:3] == ["gh"] else None
    if parsed.netloc == "github.com":
        return "/".join(parsed.path.strip("/").split("/")[:2])
    repo = parse_qs(parsed.query).get("repo")
    if repo:  # nbgitpuller: ?repo=https://github.com/owner/name
        return repository_of(unquote(repo[0]))
    return None


def offending(links: list[str], trees: dict[str, Path], here: Path) -> list[str]:
    """The links that open a tree holding source/, or a repository whose tree is not known; a
    relative link is read in `here`, the student repository, where the students' READMEs live."""
    bad = []
    for url in links:
        if url.startswith(("#", "mailto:")) or urlparse(url).netloc in ("img.shields.io", "nbgrader.readthedocs.io"):
            continue
        if urlparse(url).scheme in ("http", "https"):
            repo = repository_of(url)
            if repo is None:
                continue  # not a repository: a page elsewhere
            tree = trees.get(repo)
            if tree is None:
                bad.append(f"{url}: opens {repo}, which is neither repository the README names")
            elif (tree / "source").exists():
                bad.append(f"{url}: opens {repo}, which holds source/ (every solution)")
            continue
        target = (here / url.split("#")[0]).resolve()
        if not target.exists():
            bad.append(f"{url}: not in the student repository")
        elif any((folder / "source").exists() for folder in [target, *target.parents] if folder.is_dir()):
            bad.append(f"{url}: a path into a tree that holds source/")
    return bad


@pytest.fixture(scope="module")
def trees(tmp_path_factory) -> dict[str, Path]:
    repos = repositories()
    student = student_folder.write(load(REPO), tmp_path_factory.mktemp("student") / "student")
    return {repos["instructor"]: REPO, repos["students"]: student}


def test_the_student_repository_holds_no_source(trees):
    assert not (trees[repositories()["students"]] / "source").exists()
    assert (trees[repositories()["instructor"]] / "source").exists()


def test_every_student_link_opens_the_student_repository(trees):
    found = 0
    for where, text in student_facing().items():
        links = [a or b for a, b in LINK.findall(text)]
        found += sum(repository_of(u) is not None for u in links)
        assert not offending(links, trees, trees[repositories()["students"]]), where
    assert found >= 2, "the Binder badges are gone"


def test_a_badge_at_the_instructor_repository_is_caught(trees):
    """The link the README had before: Binder built from this repository."""
    old = "https://mybinder.org/v2/gh/attention-course/attention/HEAD?urlpath=course%2Fen"
    here = trees[repositories()["students"]]
    assert offending([old], trees, here) == [
        f"{old}: opens attention-course/attention, which holds source/ (every solution)"
    ]
    assert offending(["https://github.com/someone/fork"], trees, here)
    assert offending(["source/attention/01_scaling_problem.ipynb"], trees, here)
    assert offending(["notebooks/attention/00_start_here.ipynb"], trees, here) == []
    assert offending(["notebooks/attention/00_start_here.ipynb"], trees, REPO)  # the same path in this tree


def test_the_instructor_readme_says_what_to_publish_and_what_never_to():
    text = (REPO / "README.md").read_text()
    part = text[text.index("### Handing the course out") : text.index("### A term")]
    assert "make student-folder" in part and "private" in part and "never" in part
