"""The course gradebook as the record: merge graded submissions into it, read grades out of it.

`make grade` grades students side by side, each in a folder of its own with a private gradebook
(SQLite takes one writer), on this machine or on Dask workers. Each graded student comes back as
plain data (`student_rows`), and one writer merges it into the course's `gradebook.db` through
nbgrader's Gradebook API as it arrives (`merge_rows`): the student
(created if new), the submission with its exchange timestamp, every cell's automatic score and
automatic comment, each notebook's late penalty. A teacher's manual scores, manual comments and
extra credit are never touched, and only the merged students' rows change.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass


def _url(path) -> str:
    return f"sqlite:///{path}"


def student_rows(source_db, assignment: str, student: str) -> dict:
    """One student's automatic grading of one assignment in a gradebook, as plain data (what a
    Dask worker sends back): the student's names, the submission's timestamp, and per notebook
    its late penalty, every grade's automatic score and every comment's automatic comment."""
    from nbgrader.api import Gradebook

    with warnings.catch_warnings(), Gradebook(_url(source_db)) as source:
        warnings.simplefilter("ignore")  # SQLAlchemy's autoflush notes inside nbgrader's API
        graded = source.find_submission(assignment, student)
        record = source.find_student(student)
        return {
            "student": {"first_name": record.first_name, "last_name": record.last_name, "email": record.email},
            "timestamp": graded.timestamp.isoformat() if graded.timestamp else None,
            "notebooks": {
                notebook.name: {
                    "late_submission_penalty": notebook.late_submission_penalty,
                    "grades": {g.name: [g.auto_score, g.needs_manual_grade] for g in notebook.grades},
                    "comments": {c.name: c.auto_comment for c in notebook.comments},
                }
                for notebook in graded.notebooks
            },
        }


def merge_rows(rows: dict, course_db, assignment: str, student: str) -> None:
    """Write one student's automatic grading (`student_rows`) into the course gradebook."""
    from datetime import datetime

    from nbgrader.api import Gradebook, MissingEntry

    timestamp = datetime.fromisoformat(rows["timestamp"]) if rows["timestamp"] else None
    with warnings.catch_warnings(), Gradebook(_url(course_db)) as course:
        warnings.simplefilter("ignore")
        course.update_or_create_student(student, **rows["student"])
        submission = course.update_or_create_submission(assignment, student, timestamp=timestamp)
        for name, notebook in rows["notebooks"].items():
            target = course.find_submission_notebook(name, assignment, student)
            target.late_submission_penalty = notebook["late_submission_penalty"]
            for grade, (score, manual) in notebook["grades"].items():
                mine = course.find_grade(grade, name, assignment, student)
                mine.auto_score, mine.needs_manual_grade = score, manual
            for comment, text in notebook["comments"].items():
                try:
                    course.find_comment(comment, name, assignment, student).auto_comment = text
                except MissingEntry:
                    continue
        submission.timestamp = timestamp
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
