"""nbgrader configuration of the attention course.

The repository root is the course root: instructors edit ``source/<assignment>``, ``make release``
writes the student version to ``notebooks/<assignment>``, submissions go to ``submitted/`` and
grading writes ``autograded/``, ``feedback/`` and ``gradebook.db``. The assignments (one per
language edition) are listed in ``course.toml``.
"""

import os

from attention_course.grading.offline_math import TEMPLATE_BASEDIRS

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = "attention-course"
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "notebooks"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(c.CourseDirectory.root, "gradebook.db")
# Files nbgrader never copies from a submission. Formgrader serves a submission's other files raw
# on the teacher's origin, so a student's page or image that could run script is never copied.
c.CourseDirectory.ignore = [
    ".ipynb_checkpoints",
    "*.pyc",
    "__pycache__",
    "feedback",
    "*.db",
    "*.html",
    "*.htm",
    "*.xhtml",
    "*.svg",
    "*.xml",
    "*.js",
]

# Execution: every cell has a time limit (Grading.cell_timeout below sets it while grading).
c.Execute.timeout = 120
c.Execute.startup_timeout = 120

# A test cell that a student deleted is put back and graded.
c.OverwriteCells.add_missing_cells = True

# Reading a submission: never through a link, never a special file, bounded in size and depth
# (attention_course/grading/intake.py); what cannot be read is graded 0 with the reason. Then the tidying that
# keeps nbgrader going (a duplicated grade cell, a deleted answer cell) comes first of its
# sanitize steps.
c.Autograde.exporter_class = "attention_course.grading.plugins.submitted.SubmittedNotebookExporter"
c.Autograde.sanitize_preprocessors = [
    "attention_course.grading.plugins.tidy.TidySubmission",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "nbgrader.preprocessors.OverwriteCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# Grading: student code runs in a confined kernel, and the course's trusted grader decides every
# test cell's score, right after nbgrader saves its own and before late penalties are applied.
# Plain `nbgrader autograde` and formgrader's autograde button grade the same way as `make grade`.
c.Autograde.autograde_preprocessors = [
    "attention_course.grading.plugins.execute.ConfinedExecute",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "attention_course.grading.plugins.readable.ReadableGrades",
    "nbgrader.preprocessors.SaveAutoGrades",
    "attention_course.grading.plugins.trusted_grades.TrustedGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# Settings of the grading (attention_course/grading/settings.py); `make grade` flags override them.
c.Grading.jobs = 1
c.Grading.memory_gib = 2.0
c.Grading.seconds = 30.0
c.Grading.cell_timeout = 120
c.Grading.student_seconds = 900
c.Grading.layers = ["auto"]

# Late submissions: nbgrader's plugin, applied to the trusted score. "zero" takes every mark
# of a late notebook; "none" records lateness only.
c.LateSubmissionPlugin.penalty_method = "none"
# Each student's own due date (the teacher's extensions.csv) and a per-day method:
# c.CourseLatePenalty.penalty_method = "per_day"; c.CourseLatePenalty.points_per_day = 0.5
# (attention_course/grading/late.py).
c.AssignLatePenalties.plugin_class = "attention_course.grading.late.CourseLatePenalty"

# The release: nbgrader's own steps, except that a multiple-choice question's answer cell becomes
# `answer = ""  # "A", "B", "C" or "D"` rather than `raise NotImplementedError()`.
c.GenerateAssignment.preprocessors = [
    "nbgrader.preprocessors.IncludeHeaderFooter",
    "nbgrader.preprocessors.InstantiateTests",
    "nbgrader.preprocessors.LockCells",
    "attention_course.authoring.nbgrader_release.ClearSolutionsAndQuestions",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.CheckCellMetadata",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.SaveCells",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbgrader.preprocessors.ClearMarkScheme",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# What a student wrote reaches formgrader's pages and the feedback pages as inert HTML: both
# render with nbconvert's HTMLExporter, formgrader's built from this file inside the Jupyter
# server. Every output is cleaned before the template sees it, rendered markdown is cleaned, and
# nbconvert's own `sanitize_html` (no script for javascript outputs, no widget state) uses the
# course's cleaner rather than bleach's short list of tags (attention_course/grading/html_safety.py).
c.HTMLExporter.preprocessors = ["attention_course.grading.html_safety.SanitizeStudentHTML"]
c.HTMLExporter.filters = {
    "markdown2html": "attention_course.grading.html_safety.SanitizedMarkdown",
    "clean_html": "attention_course.grading.html_safety.clean",
    "mathjax_source": "attention_course.grading.offline_math.mathjax_source",
}
# Maths without a network: formgrader's and the feedback pages embed MathJax from a pinned package
# instead of loading it from a CDN (attention_course/grading/offline_math.py).
c.HTMLExporter.extra_template_basedirs = TEMPLATE_BASEDIRS
c.HTMLExporter.sanitize_html = True
c.HTMLExporter.skip_svg_encoding = False

# Feedback pages speak the submission's language: nbgrader's feedback template with its labels
# translated, chosen for each notebook by its edition (attention_course/grading/feedback_pages.py). Feedback never
# shows the hidden tests.
c.GenerateFeedback.exporter_class = "attention_course.grading.feedback_pages.FeedbackExporter"
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
