# Attention, Step by Step: every command runs from the repository root.
#   make lab       set up .venv (first time) and open JupyterLab
#   make test      set up .venv (first time) and run every check (what CI runs)
#   make test-browser  a student's first failing test in JupyterLab, in headless Chromium
#   make release   regenerate release/ and solutions/ from source/ with nbgrader
#   make lectures  re-execute the lecture notebooks in notebooks/, storing their outputs
#   make bench     print timings: notebooks, autograding, training
#   make collect / autograde / feedback / grades   the instructor's grading cycle (see README);
#                  make grades LMS_GRADEBOOK=<exported CSV> ASSIGNMENT=...  fills the LMS's gradebook

PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
export PATH := $(BIN):$(PATH)
export PYTHONHASHSEED := 0
# `course/` (the instructor's tools, which nbgrader_config.py imports) is not installed: students
# install `utils` only. Every command here finds it on the path.
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))

ASSIGNMENT ?=
LMS_GRADEBOOK ?=
LMS_COLUMN ?=
# Extra options for `make lab`, e.g. LAB_ARGS="--ip=0.0.0.0 --port=8888 --no-browser" on a server.
LAB_ARGS ?=
# Jupyter refuses to run as root (as in a container) unless told to.
ROOT_ARGS := $(if $(filter 0,$(shell id -u)),--allow-root)
NBVAL := pytest --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:randomly

.PHONY: lab test test-browser lint unit nbval release lectures bench autograde feedback grades collect clean

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=$(CURDIR) $(ROOT_ARGS) $(LAB_ARGS)

test: $(STAMP)
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory lint unit nbval && \
	echo "make test: all checks passed in $$(( $$(date +%s) - start )) s"

test-browser: $(STAMP)
	$(BIN)/pytest tests/browser/jupyterlab_check.py

lint: $(STAMP)
	$(BIN)/ruff check .

unit: $(STAMP)
	$(BIN)/pytest tests

nbval: $(STAMP)
	$(BIN)/$(NBVAL) notebooks solutions

release: $(STAMP)
	$(BIN)/python -m course.release $(ASSIGNMENT)

lectures: $(STAMP)
	$(BIN)/python -m course.execute notebooks

bench: $(STAMP)
	$(BIN)/python -m course.bench

autograde: $(STAMP)
	$(BIN)/python -m course.instructor autograde $(ASSIGNMENT)

feedback: $(STAMP)
	$(BIN)/python -m course.instructor feedback $(ASSIGNMENT)

grades: $(STAMP)
	$(BIN)/python -m course.instructor grades $(ASSIGNMENT) \
		--lms-gradebook "$(LMS_GRADEBOOK)" --lms-column "$(LMS_COLUMN)"

collect: $(STAMP)
	$(BIN)/python -m course.instructor collect $(ASSIGNMENT)

clean:
	rm -rf autograded feedback upload grades.csv browser-screenshots .pytest_cache .ruff_cache
