# Attention course: every command a student, teacher, maintainer or CI needs.
#   make lab            create .venv if needed, install everything, open JupyterLab on the course
#                       (a student's JupyterLab; EDITION=zh-CN opens the Chinese edition in Chinese)
#   make test           create .venv if needed, run the whole test suite (about 30 minutes on two cores)
#   make test-fast      the tests that start no kernel, browser or grading run (under a minute)
#   make outputs        rebuild what is built from the sources: case file, stored outputs, editions, releases
#                       (NOTEBOOKS="01_scaling_problem" re-runs only those notebooks)
#   make release        regenerate the student releases notebooks/<assignment> from source/ with nbgrader
#   make translations   carry English changes into the catalogues (i18n/) and list what is missing or stale
#   make check-grader   print the confinement layers grading gets on this machine; non-zero if it would refuse
#   make grade          grade every submission under submitted/ (JOBS=N at a time, STUDENT=alice for one,
#                       SCHEDULER=local or tcp://host:8786 on Dask; a rerun keeps what was graded)
#   make similarity     the similarity report of the submissions (build/similarity/, offline; docs/similarity.md)
#   make report         what the class got wrong, from what grading recorded (build/report/)
#   make formgrader     the teacher's JupyterLab, with nbgrader's formgrader
#   make student-folder write build/student/: what students get, without solutions or grading code
#   make bench          print the performance figures (build/bench.json)
#   make weights        retrain the small models the labs show (helpers/data/*.npz, a few minutes)
#   make lint           ruff (lint and format check)
#   make clean          remove build output (build/)

VENV   ?= .venv
PY     := $(VENV)/bin/python
# The Python that creates .venv: 3.11, 3.12 or 3.13 (make lab PYTHON=python3.13 picks one).
PYTHON ?= python3
PYTHONS := 3.11 3.12 3.13
STAMP  := $(VENV)/.installed

# Every recipe runs with the venv's bin first on PATH: nbgrader itself calls `jupyter` by name,
# and the python3 kernel must be the venv's.
export PATH := $(abspath $(VENV))/bin:$(PATH)
export VIRTUAL_ENV := $(abspath $(VENV))
# This course's own helpers first (a copy of the course, as in the tests, builds and runs its own).
export PYTHONPATH := $(abspath course_helpers)$(if $(PYTHONPATH),:$(PYTHONPATH))

JOBS    ?=
STUDENT ?=
SCHEDULER ?=
EDITION ?= en
NOTEBOOKS ?=
# Extra arguments, e.g. make lab LAB_ARGS="--no-browser --port=8899" or make test PYTEST_ARGS="-k release"
LAB_ARGS    ?=
PYTEST_ARGS ?=
GRADE_ARGS  ?=
BENCH_ARGS  ?=
# JupyterLab refuses to start as root (containers, CI) unless told --allow-root.
LAB_ROOT = $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: python lab test test-fast outputs release translations check-grader grade similarity report formgrader student-folder bench weights lint clean

# Which Python make uses (the venv's, or PYTHON to create it), said on every run; refused unless
# it is one of PYTHONS.
python:
	@$(if $(wildcard $(PY)),$(PY),$(PYTHON)) -c 'import sys; v = "%d.%d" % sys.version_info[:2]; ok = v in "$(PYTHONS)".split(); \
	print(f"Using Python {v} ({sys.executable})." if ok else f"Python {v} ({sys.executable}) is not supported: use 3.11, 3.12 or 3.13, e.g. make PYTHON=python3.12 (and rm -rf $(VENV) if it was made with {v})."); \
	sys.exit(not ok)'

# The virtual environment is (re)installed whenever requirements.txt or pyproject.toml is newer
# than the stamp: the pinned packages, then this project (the grading tools) and the notebooks'
# helpers (course_helpers/), both in editable mode.
$(STAMP): requirements.txt pyproject.toml course_helpers/pyproject.toml | python
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -r requirements.txt
	$(PY) -m pip install --no-deps --no-build-isolation -e . -e course_helpers
	touch $@

# A student's JupyterLab on the edition's start page, in its language (python -m helpers.lab: the
# editions of course.toml; binder/jupyter/ keeps out the instructor panels and the news pop-up).
lab: $(STAMP)
	$(PY) -m helpers.lab $(EDITION) $(LAB_ROOT) $(LAB_ARGS)

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

test-fast: $(STAMP)
	$(PY) -m pytest -m "not slow" $(PYTEST_ARGS)

outputs: $(STAMP)
	$(PY) -m attention_course.authoring.outputs $(NOTEBOOKS)

release: $(STAMP)
	$(PY) -m attention_course.authoring.outputs --no-execute

translations: $(STAMP)
	$(PY) -m attention_course.authoring.edition --update

check-grader: $(STAMP)
	$(PY) -m attention_course.grading.check

grade: $(STAMP)
	$(PY) -m attention_course.grading.grade $(if $(JOBS),--jobs $(JOBS)) $(if $(SCHEDULER),--scheduler $(SCHEDULER)) $(foreach s,$(STUDENT),--student $(s)) $(GRADE_ARGS)

similarity: $(STAMP)
	$(PY) -m attention_course.grading.similarity

report: $(STAMP)
	$(PY) -m attention_course.grading.class_report

formgrader: $(STAMP)
	$(VENV)/bin/jupyter lab --ServerApp.default_url=/formgrader $(LAB_ROOT) $(LAB_ARGS)

student-folder: $(STAMP)
	$(PY) -m attention_course.authoring.student_folder build/student

bench: $(STAMP)
	$(PY) tests/bench.py $(BENCH_ARGS)

# Seeded, on one thread, under nice: the num_heads lab's models and the text model of notebook 04.
weights: $(STAMP)
	nice -n 10 $(PY) -m attention_course.authoring.weights

lint: $(STAMP)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

clean:
	rm -rf build/
