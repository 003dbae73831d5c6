"""A class on JupyterHub, end to end, in real Chromium (hub/jupyterhub_config.py; tests/class_hub.py starts it).

The instructor releases the assignment in formgrader (a hub service under the grader account);
a student logs in, fetches it from the Assignments tab, answers one exercise in JupyterLab and
submits; the instructor collects, autogrades the student in formgrader, generates and releases the
feedback; the student fetches the feedback and reads their score. A second student may open
neither formgrader nor the first student's server, and as an OS account can read neither the
first student's home nor their submission or feedback in the exchange. Screenshots of every step
go to build/screenshots/hub-*.png.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from attention_course.model.manifest import load
from browser import SHOTS, chromium
from class_hub import COURSE_ID, INSTRUCTOR, STUDENTS, class_hub, password
from classroom import right_answer
from conftest import REPO

pytestmark = pytest.mark.slow
ANN, BEN = STUDENTS
ASSIGNMENT = "attention"
NOTEBOOK = "01_scaling_problem"
EXERCISE = "raw_scores"
WAIT = 120_000  # ms: a student's server starting, a page of JupyterLab loading
GRADING_WAIT = 900_000  # ms: formgrader autograding the whole assignment of one student


def shot(page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"hub-{name}.png"))


def log_in(browser, hub, user: str):
    """A browser context of its own, logged in to the hub as `user`; returns its page."""
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(f"{hub.url}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", password(user))
    page.click("#login_submit")
    page.wait_for_url(f"**/user/{user}/lab**", timeout=WAIT)
    page.wait_for_selector(".jp-LauncherCard", timeout=WAIT)
    return page


def formgrader(page, hub, path: str = "manage_assignments") -> None:
    page.goto(f"{hub.url}/services/{COURSE_ID}/formgrader/{path}")
    page.wait_for_selector("table tbody tr", timeout=WAIT)


def formgrader_action(page, cell: str, wait: float = WAIT, student: str = "") -> str:
    """Click the action in `cell` (a class of formgrader's table) of the assignment's row (or of
    the student's, on the submissions page); return formgrader's message once it reports success."""
    if student:
        row = page.locator("tbody tr").filter(has_text=student)
    else:
        row = page.locator("tbody tr").filter(has=page.get_by_role("link", name=ASSIGNMENT, exact=True))
    row.locator(f"td.{cell} a").click()
    dialog = page.locator("#success-modal, #error-modal")
    dialog.wait_for(state="visible", timeout=wait)
    text = dialog.inner_text()
    assert page.locator("#success-modal").is_visible(), f"formgrader {cell}: {text}"
    dialog.get_by_role("button", name="OK").click()
    dialog.wait_for(state="detached", timeout=WAIT)
    return text


def assignments_tab(page):
    """The student's Assignments tab (Nbgrader menu > Assignment List), refreshed."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    page.locator(".lm-Menu-itemLabel", has_text="Assignment List").click()
    page.locator("#released_assignments_list").wait_for(timeout=WAIT)
    page.locator("#refresh_assignments_list").click()
    page.locator("#submitted_assignments_list_loading").wait_for(state="hidden", timeout=WAIT)
    return page


def open_fetched_notebook(page, shoot: str) -> None:
    """Unfold the fetched assignment and open NOTEBOOK from the Assignments tab.

    The tab rebuilds its lists, folded, whenever a fetch or refresh answers, and an answer can
    land after the unfold click: the notebook's link is then in the page but hidden. So unfold
    again until the link shows, then click it.
    """
    downloaded = page.locator("#fetched_assignments_list")
    link = downloaded.locator(".assignment-notebooks a").get_by_text(NOTEBOOK, exact=True)
    unfold = downloaded.locator("a.assignment-notebooks-link")
    deadline = time.monotonic() + WAIT / 1000
    while True:
        if link.is_visible():
            shot(page, shoot)
            try:
                link.click(timeout=5_000)
                return
            except PlaywrightTimeout:
                pass  # folded again between the look and the click
        elif unfold.count():
            unfold.first.click(timeout=5_000)
        if time.monotonic() > deadline:
            raise AssertionError(f"the fetched {NOTEBOOK} never showed in the Assignments tab")
        page.wait_for_timeout(500)


def answer_exercise(page, hub) -> None:
    """Open the fetched notebook, replace the exercise's answer cell with a right answer, save."""
    course = load(REPO)
    cell = page.locator(".jp-CodeCell").filter(has_text=f"def {EXERCISE}(").first
    cell.wait_for(timeout=WAIT)
    editor = cell.locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    answer = right_answer(course, EXERCISE)
    page.keyboard.insert_text(answer)
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    saved = Path(hub.home(ANN)) / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    for _ in range(120):  # a minute for JupyterLab to save
        try:  # JupyterLab may be halfway through writing it
            sources = ["".join(c["source"]).strip() for c in json.loads(saved.read_text())["cells"]]
        except (OSError, ValueError):
            sources = []
        if answer.strip() in sources:
            return
        page.wait_for_timeout(500)
    raise AssertionError(f"the answer, as typed, never reached {saved}")


def as_user(user: str, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", user, "--", *command], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    """The whole term, run once; returns what each step saw."""
    seen: dict = {}
    tmp = tmp_path_factory.mktemp("hub")
    with class_hub(tmp) as hub, chromium() as browser:
        seen["hub"] = hub
        teacher = log_in(browser, hub, INSTRUCTOR)
        formgrader(teacher, hub)
        shot(teacher, "1-formgrader")
        seen["generate"] = formgrader_action(teacher, "assign")  # the release, from source/, into the gradebook
        seen["release"] = formgrader_action(teacher, "release")

        ann = log_in(browser, hub, ANN)
        panel = assignments_tab(ann)
        released = panel.locator("#released_assignments_list")
        released.get_by_role("button", name="Fetch").click(timeout=WAIT)
        open_fetched_notebook(panel, shoot="2-fetched")
        answer_exercise(ann, hub)
        shot(ann, "3-answered")
        panel = assignments_tab(ann)
        panel.locator("#fetched_assignments_list").get_by_role("button", name="Submit").click()
        panel.locator("#submitted_assignments_list").get_by_text(ASSIGNMENT, exact=True).wait_for(timeout=WAIT)
        shot(ann, "4-submitted")

        formgrader(teacher, hub)
        seen["collect"] = formgrader_action(teacher, "collect")
        formgrader(teacher, hub, f"manage_submissions/{ASSIGNMENT}")
        seen["autograde"] = formgrader_action(teacher, "autograde", wait=GRADING_WAIT, student=ANN)
        teacher.reload()
        teacher.wait_for_selector("tbody tr td.score", timeout=WAIT)
        seen["formgrader_score"] = teacher.locator("tbody tr", has_text=ANN).locator("td.score").inner_text()
        shot(teacher, "5-graded")
        formgrader(teacher, hub)
        seen["generate_feedback"] = formgrader_action(teacher, "generate-feedback", wait=GRADING_WAIT)
        seen["release_feedback"] = formgrader_action(teacher, "release-feedback")
        shot(teacher, "6-feedback-released")

        panel = assignments_tab(ann)
        submitted = panel.locator("#submitted_assignments_list")
        submitted.get_by_role("button", name="Fetch Feedback").click(timeout=WAIT)
        submitted.get_by_text("view feedback").first.wait_for(timeout=WAIT)
        seen["feedback_files"] = sorted(p.name for p in (hub.home(ANN) / ASSIGNMENT / "feedback").glob("*/*.html"))
        shot(ann, "7-feedback-fetched")
        files = sorted((hub.home(ANN) / ASSIGNMENT / "feedback").glob(f"*/{NOTEBOOK}.html"))
        assert files, f"no feedback fetched:\n{hub.log.read_text()[-4000:]}"
        feedback_url = f"{hub.url}/user/{ANN}/files/{files[-1].relative_to(hub.home(ANN))}"
        ann.goto(feedback_url)
        seen["feedback_text"] = ann.locator("body").inner_text()
        shot(ann, "8-feedback")

        ben = log_in(browser, hub, BEN)
        seen["ben_formgrader"] = ben.goto(f"{hub.url}/services/{COURSE_ID}/formgrader").status
        seen["ben_ann_server"] = ben.goto(f"{hub.url}/user/{ANN}/lab").status
        seen["ben_ann_feedback"] = ben.goto(feedback_url).status
        shot(ben, "9-other-student")
        seen["menu"] = nbgrader_menu(ben, hub, BEN)
        yield seen


def nbgrader_menu(page, hub, user) -> list[str]:
    """The items of a student's Nbgrader menu."""
    page.goto(f"{hub.url}/user/{user}/lab")
    page.wait_for_selector(".jp-LauncherCard", timeout=WAIT)
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    items = [t for t in page.locator(".lm-Menu-content .lm-Menu-itemLabel").all_inner_texts() if t.strip()]
    page.keyboard.press("Escape")
    return items


def expected_points() -> tuple[float, float]:
    """The points of the answered exercise's test, and of the whole notebook."""
    cells = json.loads((REPO / "notebooks" / ASSIGNMENT / f"{NOTEBOOK}.ipynb").read_text())["cells"]
    graded = [c["metadata"]["nbgrader"] for c in cells if c["metadata"].get("nbgrader", {}).get("grade")]
    mine = sum(g["points"] for g in graded if g["grade_id"] == f"test_{EXERCISE}")
    return mine, sum(g["points"] for g in graded)


def test_formgrader_releases_collects_grades_and_returns_feedback(term):
    assert "Successfully created the student version" in term["generate"]
    assert "Successfully released" in term["release"]
    assert "Successfully collected" in term["collect"]
    assert "Successfully autograded" in term["autograde"]
    assert "Successfully generated feedback" in term["generate_feedback"]
    assert "Successfully released feedback" in term["release_feedback"]


def test_the_gradebook_holds_the_students_score(term):
    """Formgrader (as the grader account) wrote the trusted score into the course's gradebook."""
    from nbgrader.api import Gradebook

    hub = term["hub"]
    mine, _ = expected_points()
    with Gradebook(f"sqlite:///{hub.course / 'gradebook.db'}") as gradebook:
        notebook = gradebook.find_submission_notebook(NOTEBOOK, ASSIGNMENT, ANN)
        by_cell = {grade.name: grade.score for grade in notebook.grades}
        assert by_cell[f"test_{EXERCISE}"] == mine
        assert notebook.score == mine, by_cell  # the one exercise answered, nothing else
    grader = term["hub"].accounts["atngrader"]
    autograded = hub.course / "autograded" / ANN / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    assert autograded.stat().st_uid == grader.pw_uid  # graded by the service's account, not root
    assert re.match(rf"^\s*{mine:g}(\.0+)?\s*/", term["formgrader_score"]), term["formgrader_score"]


def test_the_student_reads_their_score_in_the_feedback(term):
    mine, total = expected_points()
    assert f"{NOTEBOOK}.html" in term["feedback_files"]
    text = term["feedback_text"]
    assert re.search(rf"Score:\s*{mine:g}(\.0+)?\s*/\s*{total:g}(\.0+)?", text), text[:2000]


def test_students_get_the_student_jupyterlab(term):
    """No formgrader, course list or create-assignment panel in a student's Nbgrader menu."""
    assert term["menu"] == ["Assignment List"]


def test_another_student_can_reach_nothing_of_the_first(term):
    hub = term["hub"]
    assert term["ben_formgrader"] == 403  # formgrader is for the instructors' group
    assert term["ben_ann_server"] == 403  # the hub does not let him into her server
    assert term["ben_ann_feedback"] == 403  # nor to her files through it
    # As an OS account: her home, and the exchange's submissions and feedback, cannot be listed or read.
    notebook = hub.home(ANN) / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    solutions = hub.course / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"  # the grader's course folder
    for command in (["cat", str(notebook)], ["ls", str(hub.home(ANN))], ["cat", str(solutions)]):
        proc = as_user(BEN, *command)
        assert proc.returncode != 0 and "Permission denied" in proc.stderr, (command, proc)
    for folder in ("inbound", "feedback"):
        path = hub.exchange / COURSE_ID / folder
        assert path.is_dir()
        proc = as_user(BEN, "ls", str(path))
        assert proc.returncode != 0 and "Permission denied" in proc.stderr, (folder, proc)
    # Her own account can read her feedback: the refusals above are not a broken exchange.
    proc = as_user(ANN, "cat", str(next((hub.home(ANN) / ASSIGNMENT / "feedback").glob(f"*/{NOTEBOOK}.html"))))
    assert proc.returncode == 0, proc
