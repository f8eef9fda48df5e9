# Attention, Step by Step: every command runs from the repository root.
#   make lab       set up .venv (first time) and open JupyterLab
#   make test      set up .venv (first time) and run every check (what CI runs)
#   make release   regenerate release/ and solutions/ from source/ with nbgrader
#   make lectures  re-execute the lecture notebooks in notebooks/, storing their outputs
#   make bench     print timings: notebooks, autograding, training
#   make collect / autograde / feedback / grades   the instructor's grading cycle (see README)

PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
export PATH := $(BIN):$(PATH)
export PYTHONHASHSEED := 0

ASSIGNMENT ?=
NBVAL := pytest --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:randomly

.PHONY: lab test lint unit nbval release lectures bench autograde feedback grades collect clean

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=$(CURDIR)

test: $(STAMP)
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory lint unit nbval && \
	echo "make test: all checks passed in $$(( $$(date +%s) - start )) s"

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
	$(BIN)/python -m course.instructor grades

collect: $(STAMP)
	$(BIN)/python -m course.instructor collect $(ASSIGNMENT)

clean:
	rm -rf autograded feedback grades.csv .pytest_cache .ruff_cache
