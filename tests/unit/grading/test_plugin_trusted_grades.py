"""`plugins.trusted_grades`, without a sandbox or a kernel: how the trusted verdicts are written into the
gradebook (a test cell's `auto_score`, `needs_manual_grade` only for a grader fault, the reason as the answer
cell's automatic comment, a teacher's `manual_score` left alone) and into the notebook (the grading summary as
its first cell, in the submission's language, with what was put right before grading), and what is reported
to the run (faults, the verdict saved, the notebook finished).

`TrustedGrades.preprocess` runs for real on a gradebook made through nbgrader's API (tests/small_gradebook.py)
and the repository's course.toml; the conversion's Run is a stand-in that hands over verdicts already made
and records what it is told (a real Run probes confinement and starts the trusted grader).
"""

from __future__ import annotations

import concurrent.futures

import nbformat
import pytest
from nbgrader.api import Gradebook
from small_gradebook import DUE, A, gradebook, submit, url

from attention_course.grading import trusted
from attention_course.grading.plugins.submitted import SubmittedNotebookExporter
from attention_course.grading.plugins.tidy import Note
from attention_course.grading.plugins.trusted_grades import TrustedGrades, _summarise
from attention_course.grading.sandbox_run import ConfinementFailed
from attention_course.grading.trusted import Verdict
from attention_course.model.manifest import load
from helpers.i18n import N_

NB = "01_scaling_problem"
COURSE = load()
CELLS = {cell.grade_id: cell for cell in trusted.test_cells(COURSE, NB)}


def verdict(grade_id: str, score: float, reason: str = "", fault: bool = False) -> Verdict:
    return Verdict(CELLS[grade_id], score, reason, fault)


class RunStandIn:
    """What TrustedGrades asks of the conversion's Run: the course, the trusted verdicts (already
    settled), what was put right, the seed, the language and the layers; it records what it is told."""

    layers = ["bwrap", "landlock"]

    def __init__(self, verdicts=None, error: BaseException | None = None, tidied=None, near=()):
        self.course = COURSE
        self.future = concurrent.futures.Future()
        if error is not None:
            self.future.set_exception(error)
        else:
            self.future.set_result(list(verdicts or []))
        self.tidied = dict(tidied or {})
        self.near = list(near)
        self.started, self.faults, self.saved, self.done = [], [], [], []

    def start_trusted(self, student, assignment):
        self.started.append((student, assignment))
        return {NB: self.future}

    def near_named(self, student, assignment):
        return list(self.near)

    def seed_for(self, assignment):
        return 4242

    def language(self, assignment):
        return self.course.language(assignment)

    def fault(self, student, assignment, notebook, kind, text):
        self.faults.append((notebook, kind, text))

    def verdict_saved(self, student, assignment, notebook):
        self.saved.append(notebook)

    def finished(self, student, assignment, notebook):
        self.done.append(notebook)


@pytest.fixture
def db(tmp_path):
    """A gradebook where ada has submitted (01's test_raw_scores is the cell it knows)."""
    path = gradebook(tmp_path / "gradebook.db")
    submit(path, "ada", {}, DUE)
    return path


def _grade(db_path, student="ada", notebook=NB, cell="test_raw_scores"):
    with Gradebook(url(db_path)) as gb:
        grade = gb.find_grade(cell, notebook, A, student)
        comment = gb.find_comment("raw_scores", notebook, A, student)
        return grade.auto_score, grade.manual_score, grade.score, grade.needs_manual_grade, comment.auto_comment


def _preprocess(run, db_path, notebook=NB, assignment=A, nb=None):
    exporter = SubmittedNotebookExporter()
    exporter.grading_run = run  # what run_of finds
    nb = nb if nb is not None else nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    resources = {"nbgrader": {"student": "ada", "assignment": assignment, "notebook": notebook, "db_url": url(db_path)}}
    return TrustedGrades(parent=exporter).preprocess(nb, resources)[0]


def _summary(nb) -> str:
    assert nb.cells[0].metadata.get("grading_summary") is True and nb.cells[0].cell_type == "markdown"
    return nb.cells[0].source


# ----------------------------------------------------------------------------------- the gradebook


def test_the_trusted_score_and_reason_replace_nbgraders_and_the_cell_is_decided(db):
    run = RunStandIn([verdict("test_raw_scores", 0.5, "Your scores are transposed."), verdict("test_quick_check", 1)])
    _preprocess(run, db)
    auto, manual, score, needs_manual, comment = _grade(db)
    assert (auto, manual, score, needs_manual) == (0.5, None, 0.5, False)
    assert comment == "Your scores are transposed."
    assert run.faults == [] and run.saved == [NB] and run.done == [NB] and run.started == [("ada", A)]


def test_full_marks_leave_no_comment(db):
    with Gradebook(url(db)) as gb:
        gb.find_comment("raw_scores", NB, A, "ada").auto_comment = "an old comment"
        gb.db.commit()
    _preprocess(RunStandIn([verdict("test_raw_scores", 2.0)]), db)
    assert _grade(db)[0] == 2.0 and _grade(db)[4] is None


def test_a_teachers_manual_score_still_wins_over_the_trusted_one(db):
    with Gradebook(url(db)) as gb:
        gb.find_grade("test_raw_scores", NB, A, "ada").manual_score = 1.5
        gb.db.commit()
    _preprocess(RunStandIn([verdict("test_raw_scores", 0.0, "not answered")]), db)
    auto, manual, score, _needs, _comment = _grade(db)
    assert (auto, manual, score) == (0.0, 1.5, 1.5)


def test_a_grader_fault_costs_the_cell_asks_for_a_teacher_and_is_reported(db):
    run = RunStandIn([verdict("test_raw_scores", 0.0, "the sandbox stopped", fault=True)])
    _preprocess(run, db)
    auto, _manual, _score, needs_manual, comment = _grade(db)
    assert (auto, needs_manual, comment) == (0.0, True, "the sandbox stopped")
    assert run.faults == [(NB, "grader", "test_raw_scores: the sandbox stopped")]


def test_a_verdict_on_a_cell_the_gradebook_does_not_know_is_skipped(db):
    run = RunStandIn([verdict("test_scaled_scores", 2.0), verdict("test_raw_scores", 1.0, "half")])
    nb = _preprocess(run, db)  # test_scaled_scores is not in this gradebook
    assert _grade(db)[0] == 1.0
    assert "**test_scaled_scores**: 2 / 2" in _summary(nb)


def test_a_confinement_failure_is_recorded_and_stops_the_notebook_with_the_gradebook_untouched(db):
    before = _grade(db)
    run = RunStandIn(error=ConfinementFailed("bwrap: no user namespaces"))
    with pytest.raises(ConfinementFailed):
        _preprocess(run, db)
    assert run.faults == [(NB, "confinement", "bwrap: no user namespaces")]
    assert run.saved == [] and run.done == [] and _grade(db) == before


def test_a_notebook_without_test_cells_is_only_marked_finished(db):
    run = RunStandIn([verdict("test_raw_scores", 0.0, "never used")])
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Start here")])
    out = _preprocess(run, db, notebook="00_start_here", nb=nb)
    assert [c.source for c in out.cells] == ["# Start here"]
    assert run.started == [] and run.done == ["00_start_here"] and run.saved == []
    assert _grade(db)[0] == 0.0  # as submitted


def test_what_was_put_right_and_near_names_reach_the_summary_once(db):
    note = Note(N_("{name}: answer cell {gid!r} was missing; it was graded as not answered"), name="01", gid="x")
    run = RunStandIn(
        [verdict("test_raw_scores", 2.0)],
        tidied={("ada", A, NB): [note]},
        near=["02_scaled_dot_product_attention.ipynb was not handed in (02-copy.ipynb was)"],
    )
    nb = _preprocess(run, db)
    summary = _summary(nb)
    assert "Put right before grading:" in summary
    assert "- 01: answer cell 'x' was missing; it was graded as not answered" in summary
    assert "- 02_scaled_dot_product_attention.ipynb was not handed in (02-copy.ipynb was)" in summary
    assert run.tidied == {}  # taken, so a regrade in the same run does not say it twice
    assert nb.cells[1].source == "x = 1"


def test_the_summary_of_a_chinese_submission_is_in_chinese(db):
    run = RunStandIn([verdict("test_raw_scores", 2.0)], near=[])
    nb = _preprocess(run, db, assignment="attention_zh")  # not in this gradebook: only the summary
    summary = _summary(nb)
    assert summary.startswith("## 评分摘要") and "4242" in summary and "bwrap, landlock" in summary


# ----------------------------------------------------------------------------------- the summary


def test_the_summary_lists_every_verdict_with_its_mark_score_and_reason():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    verdicts = [
        verdict("test_raw_scores", 2.0),
        verdict("test_scaled_scores", 0.5, "Divide by\n  sqrt(d_k),\tnot d_k."),
        verdict("test_quick_check", 0.0, "Not answered."),
    ]
    _summarise(nb, verdicts, 17, "en", ["bwrap"])
    lines = _summary(nb).splitlines()
    assert lines[0] == "## Grading summary"
    assert "- ✓ **test_raw_scores**: 2 / 2" in lines
    assert "- ✗ **test_scaled_scores**: 0.5 / 2. Divide by sqrt(d_k), not d_k." in lines
    assert "- ✗ **test_quick_check**: 0 / 1. Not answered." in lines
    assert lines[-1] == "Graded by the course's trusted grader (seed 17; confinement: bwrap)."
    assert "Put right before grading:" not in lines
    assert [c.source for c in nb.cells[1:]] == ["x = 1"]


def test_a_long_reason_is_cut_to_600_characters():
    nb = nbformat.v4.new_notebook()
    _summarise(nb, [verdict("test_raw_scores", 0.0, "word " * 500)], 1, "en", [])
    line = next(x for x in _summary(nb).splitlines() if "test_raw_scores" in x)
    assert line == "- ✗ **test_raw_scores**: 0 / 2. " + "word " * 120  # 600 characters of the reason


def test_without_confinement_the_summary_says_none():
    nb = nbformat.v4.new_notebook()
    _summarise(nb, [], 3, "en", [])
    assert _summary(nb).splitlines()[-1] == "Graded by the course's trusted grader (seed 3; confinement: none)."
    _summarise(nb, [], 3, "zh-CN", [])
    assert _summary(nb).splitlines()[-1].endswith("无）。")


def test_a_new_summary_replaces_the_old_one():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 01")])
    _summarise(nb, [verdict("test_raw_scores", 0.0, "first")], 1, "en", ["bwrap"])
    _summarise(nb, [verdict("test_raw_scores", 2.0)], 2, "en", ["bwrap"])
    assert sum(bool(c.metadata.get("grading_summary")) for c in nb.cells) == 1
    assert "seed 2" in _summary(nb) and "first" not in _summary(nb)
    assert [c.source for c in nb.cells[1:]] == ["# 01"]


def test_notes_are_said_in_the_submissions_language_and_plain_strings_as_they_are():
    note = Note(N_("{name}: answer cell {gid!r} was missing; it was graded as not answered"), name="01", gid="x")
    nb = nbformat.v4.new_notebook()
    _summarise(nb, [], 1, "zh-CN", ["bwrap"], notes=[note, "plain words"])
    lines = _summary(nb).splitlines()
    assert lines[0] == "## 评分摘要" and lines[2] == "评分前已更正："
    assert lines[3] == "- 01：缺少答案单元格 'x'，按未作答评分。"
    assert lines[4] == "- plain words"
