# Attention course: every command a student, teacher or CI needs.
#   make lab      create .venv if needed, install requirements.txt, open JupyterLab on the course
#   make test     create .venv if needed, run the whole pytest suite (pytest.ini decides what runs)
#   make release  regenerate the student release notebooks/attention from source/attention
#   make grade    grade every submission under submitted/ (JOBS=N students at a time)
#   make bench    print the performance figures of COURSE.md (build/bench.json)
#   make clean    remove build output (build/)

VENV   ?= .venv
PY     := $(VENV)/bin/python
PYTHON ?= python3
STAMP  := $(VENV)/.installed

# Every recipe runs with the venv's bin first on PATH: nbgrader itself calls `alembic` and
# `jupyter` by name, and the python3 kernel must be the venv's.
export PATH := $(abspath $(VENV))/bin:$(PATH)
export VIRTUAL_ENV := $(abspath $(VENV))

# Students graded at a time by `make grade`.
JOBS ?= 1

# Extra arguments, e.g. make lab LAB_ARGS="--no-browser --port=8899" or make test PYTEST_ARGS="-k release"
LAB_ARGS    ?=
PYTEST_ARGS ?=
# JupyterLab refuses to start as root (containers, CI) unless told --allow-root.
LAB_ROOT = $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: lab test release grade bench clean

# The virtual environment is (re)installed whenever requirements.txt is newer than the stamp.
$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -r requirements.txt
	touch $@

lab: $(STAMP)
	$(VENV)/bin/jupyter lab notebooks/attention/00_start_here.ipynb $(LAB_ROOT) $(LAB_ARGS)

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

# nbgrader deletes and rewrites notebooks/attention (the release folder) from source/attention.
release: $(STAMP)
	$(VENV)/bin/nbgrader generate_assignment attention --force
	find notebooks/attention -depth \( -name __pycache__ -o -name .ipynb_checkpoints \) -type d -exec rm -rf {} +


clean:
	rm -rf build/

# Grade every submission under submitted/<student>/attention/: autograde, trusted verdicts,
# feedback HTML (hidden tests cleared), grades.csv. JOBS=N grades N students at a time.
grade: $(STAMP)
	$(PY) -m grading.grade --jobs $(JOBS) $(GRADE_ARGS)

# The performance budgets of COURSE.md, side by side in one run (figures in build/bench.json).
# BENCH_ARGS="--class-size 40" measures the JOBS speed-up on a class of 40.
bench: $(STAMP)
	$(PY) -m grading.bench $(BENCH_ARGS)
