"""nbgrader configuration of the attention course.

The repository root is the course root: instructors edit ``source/attention``, ``make release``
writes the student version to ``notebooks/attention``, submissions go to ``submitted/`` and
grading writes ``autograded/`` and ``feedback/``.
"""
import os

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = "attention-course"
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "notebooks"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(c.CourseDirectory.root, "gradebook.db")
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "*.db"]

# Execution: the kernel is named explicitly, every cell has a time limit.
c.Execute.kernel_name = "python3"
c.Execute.timeout = 120
c.Execute.startup_timeout = 120

# A test cell that a student deleted is put back and graded.
c.OverwriteCells.add_missing_cells = True

# Feedback never shows the hidden tests.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
