"""The course as both authoring and grading need it: the manifest (`course.toml`) and its schema,
the cases of every exercise, the reference solutions read from the instructor's notebooks, their
expected results, and the translation catalogues. Never released to students."""
