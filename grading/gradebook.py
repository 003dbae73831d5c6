"""The course gradebook as the record: merge graded submissions into it, read grades out of it.

`make grade` grades groups of students side by side, each group in a folder of its own with a
private gradebook (SQLite takes one writer). When the groups are done, one writer merges each
graded student into the course's `gradebook.db` through nbgrader's Gradebook API: the student
(created if new), the submission with its exchange timestamp, every cell's automatic score and
automatic comment, each notebook's late penalty. A teacher's manual scores, manual comments and
extra credit are never touched, and only the merged students' rows change.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass


def _url(path) -> str:
    return f"sqlite:///{path}"


def merge_student(source_db, course_db, assignment: str, student: str) -> None:
    """Copy one student's automatic grading of one assignment from a group gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    with warnings.catch_warnings(), Gradebook(_url(source_db)) as source, Gradebook(_url(course_db)) as course:
        warnings.simplefilter("ignore")  # SQLAlchemy's autoflush notes inside nbgrader's API
        graded = source.find_submission(assignment, student)
        record = source.find_student(student)
        course.update_or_create_student(
            student, first_name=record.first_name, last_name=record.last_name, email=record.email
        )
        submission = course.update_or_create_submission(assignment, student, timestamp=graded.timestamp)
        for notebook in graded.notebooks:
            target = course.find_submission_notebook(notebook.name, assignment, student)
            target.late_submission_penalty = notebook.late_submission_penalty
            for grade in notebook.grades:
                mine = course.find_grade(grade.name, notebook.name, assignment, student)
                mine.auto_score = grade.auto_score
                mine.needs_manual_grade = grade.needs_manual_grade
            for comment in notebook.comments:
                try:
                    course.find_comment(
                        comment.name, notebook.name, assignment, student
                    ).auto_comment = comment.auto_comment
                except MissingEntry:
                    continue
        submission.timestamp = graded.timestamp
        course.db.commit()


def zero_notebooks(course, course_db, assignment: str, student: str, notebooks: list[str], reason: str) -> None:
    """A row of 0 with the reason for each of a student's notebooks that could not be graded:
    every test cell's automatic score 0 (decided, so nothing waits for a manual grade), the
    reason as each answer cell's automatic comment. A teacher's manual grades stay."""
    from nbgrader.api import Gradebook, MissingEntry

    with warnings.catch_warnings(), Gradebook(_url(course_db)) as gradebook:
        warnings.simplefilter("ignore")
        gradebook.update_or_create_student(student)
        gradebook.update_or_create_submission(assignment, student)
        for name in notebooks:
            try:
                notebook = gradebook.find_submission_notebook(name, assignment, student)
            except MissingEntry:
                continue
            for grade in notebook.grades:
                grade.auto_score, grade.needs_manual_grade = 0.0, False
            answers = {item.answer_cell for item in course.items_in(name)}
            for comment in notebook.comments:
                if comment.name in answers:
                    comment.auto_comment = reason
        gradebook.db.commit()


@dataclass
class NotebookGrade:
    """A student's grade on one notebook, as the gradebook holds it."""

    student: str
    assignment: str
    notebook: str
    score: float
    max_score: float
    late_penalty: float


def grades(course_db, assignment: str, students: list[str] | None = None) -> list[NotebookGrade]:
    """Every notebook grade of an assignment (score after manual grades, before the late penalty)."""
    from nbgrader.api import Gradebook

    rows = []
    with Gradebook(_url(course_db)) as gradebook:
        for submission in gradebook.assignment_submissions(assignment):
            if students is not None and submission.student.id not in students:
                continue
            for notebook in submission.notebooks:
                if not notebook.max_score:
                    continue  # an ungraded notebook (the start page)
                rows.append(
                    NotebookGrade(
                        submission.student.id,
                        assignment,
                        notebook.name,
                        notebook.score,
                        notebook.max_score,
                        notebook.late_submission_penalty or 0.0,
                    )
                )
    return rows
