# Attention, Step by Step: every command runs from the repository root.
#   make lab       set up .venv (first time) and open JupyterLab
#   make quick     lint and every test not marked slow or hub (under 3 minutes on 2 idle cores),
#                  for your own loop; it prints its time
#   make test      set up .venv (first time) and run every check (what CI runs)
#   make nbval     re-run every stored notebook and compare its outputs on three code paths:
#                  this CPU's own, the plain (SSE) one, and MKL's reproducible branch;
#                  make nbval-all adds AVX2, MKL's AVX2 and AVX-512 branches, oneDNN below AMX;
#                  make nbval-PATH runs one path alone (PATH: one of NBVAL_PATHS below)
#   make test-browser  a student's first failing test in JupyterLab, a hostile submission's
#                  feedback and formgrader pages, and the formgrader of a course graded
#                  locally (and of a replaced gradebook), in headless Chromium
#   make test-hub  a class on a real JupyterHub (deploy/), end to end with real Unix users;
#                  needs root, configurable-http-proxy (npm) and setfacl (.ci/run installs them)
#   make test-edges  the stored notebooks in new venvs under build/edges/, at the edges the course
#                  claims: Python 3.13 and 3.11 with the newest packages its ranges allow (strict
#                  nbval), and a Colab-like job (newer torch, older Jupyter, the edition's Colab cell)
#   make release   regenerate release/ and solutions/ from source/ with nbgrader; it refuses to
#                  overwrite a lab that was run or edited in release/ (FORCE=1 overwrites it)
#   make edition   the student edition, build/student/ and build/student.zip: lectures, labs, utils;
#                  EDITION_REPOSITORY=OWNER/NAME (and EDITION_BRANCH) adds Colab's badge and cell
#   make lock      install requirements.txt afresh into .venv and write requirements.lock from it
#   make lectures  re-execute the lecture notebooks in notebooks/, storing their outputs
#   make bench     print timings: notebooks, autograding, training
#   make collect / autograde / feedback / grades   the instructor's grading cycle (see README);
#                  make autograde JOBS=N  grades on N workers (default: every core);
#                  REGRADE=ID,...  grades those students afresh
#                  make grades LMS_GRADEBOOK=<exported CSV> ASSIGNMENT=...  fills the LMS's gradebook
#                  PROVISIONAL=1  feedback and LMS grades before every written answer is graded
#   make lti-grades ASSIGNMENT=NN_topic  send the lab's grades to the LMS its students launched it
#                  from (LTI 1.3, AGS; see deploy/jupyterhub_lti_config.py); PROVISIONAL=1 as above;
#                  REPLACE_FINAL=1 lets a provisional score replace a final one already sent

PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
export PATH := $(BIN):$(PATH)
export PYTHONHASHSEED := 0
# `utils` and `course` are installed editable into .venv (pip install -e .); the root also leads
# the module path, so that every command here imports this checkout's files.
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))

ASSIGNMENT ?=
# UNSANDBOXED=1 grades with the instructor's own rights where no sandbox can be made (not advised).
UNSANDBOXED ?=
# PER_PROCESS=1 grades where no control group can be made: each sandbox has rlimits alone.
PER_PROCESS ?=
# JOBS=N grades with N workers, each with its own sandboxed kernels (default: one per core).
JOBS ?=
# REGRADE=ID[,ID...] grades those students' submissions afresh. With a PostgreSQL gradebook, make
# autograde run on several machines shares the class through the gradebook's work queue (README).
REGRADE ?=
LMS_GRADEBOOK ?=
LMS_COLUMN ?=
# Extra options for `make lab`, e.g. LAB_ARGS="--ip=0.0.0.0 --port=8888 --no-browser" on a server.
LAB_ARGS ?=
# Jupyter refuses to run as root (as in a container) unless told to.
ROOT_ARGS := $(if $(filter 0,$(shell id -u)),--allow-root)
NBVAL := pytest --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:randomly
# The code paths of the x86 libraries that choose their kernels by CPU at run time: ATen (torch's
# own kernels), MKL (matrix products, by vendor and instruction set) and oneDNN (AMX on recent
# Intel). Stored outputs must reproduce on each; see "Outputs that reproduce on every CPU".
PATH_native :=
PATH_plain := ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41 MKL_ENABLE_INSTRUCTIONS=SSE4_2
PATH_avx2 := ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2
PATH_mkl-compatible := MKL_CBWR=COMPATIBLE
PATH_mkl-avx2 := MKL_CBWR=AVX2
PATH_mkl-avx512 := MKL_CBWR=AVX512
PATH_onednn-avx512 := ONEDNN_MAX_CPU_ISA=AVX512_CORE
NBVAL_PATHS := native plain avx2 mkl-compatible mkl-avx2 mkl-avx512 onednn-avx512
NBVAL_TEST_PATHS := native plain mkl-compatible

# On Linux, PyPI's torch wheel brings the CUDA libraries (gigabytes): take the CPU build from
# PyTorch's own index first, as requirements.txt pins it (elsewhere PyPI's wheel is the CPU one).
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
TORCH_CPU := $(if $(filter Linux,$(shell uname -s)),$(shell sed -n 's/^torch==\(.*\)/torch==\1+cpu/p' requirements.txt))

.PHONY: lab quick test test-browser test-hub test-edges lint unit nbval nbval-all $(NBVAL_PATHS:%=nbval-%) release edition lock lectures bench autograde feedback grades collect clean

# requirements.lock pins everything requirements.txt brings (make lock writes it): a constraint.
LOCK := $(if $(UNLOCKED),,-c requirements.lock)
EDITION_REPOSITORY ?=
EDITION_BRANCH ?= main

# The server configuration: Validate lists each cell's findings too (utils/validate_findings.py),
# and the formgrader's pages are the course's (course/coursedir/), in every server here.
SERVER_CONFIG := jupyter-config/jupyter_server_config.d/utils.json
# JupyterLab asks nobody here about Jupyter news (its pop-up covers the end of outputs).
LAB_SETTINGS := jupyter-config/lab/settings/overrides.d/course.json
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check
TORCH_INSTALL := $(if $(TORCH_CPU),$(PIP) --no-deps --extra-index-url $(TORCH_CPU_INDEX) "$(TORCH_CPU)")

$(STAMP): requirements.txt requirements.lock pyproject.toml $(SERVER_CONFIG) $(LAB_SETTINGS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(TORCH_INSTALL)
	$(PIP) -r requirements.txt $(LOCK)
	$(PIP) --no-deps --no-build-isolation -e .
	install -D -m 644 $(SERVER_CONFIG) $(VENV)/etc/jupyter/jupyter_server_config.d/utils.json
	install -D -m 644 $(LAB_SETTINGS) $(VENV)/share/jupyter/lab/settings/overrides.d/course.json
	touch $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=$(CURDIR) $(ROOT_ARGS) $(LAB_ARGS)

# The unit tests wait on kernels and servers much of the time, and every notebook computes on
# one thread: the unit tests and nbval's paths run side by side, two at a time, each printing its
# output when it ends; one failing stops none of the others.
test: $(STAMP)
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory lint && \
	echo "make test: the unit tests and nbval's $(words $(NBVAL_TEST_PATHS)) paths run side by side; each prints when it ends" && \
	$(MAKE) --no-print-directory --keep-going --jobs=2 --output-sync=target unit nbval && \
	echo "make test: all checks passed in $$(( $$(date +%s) - start )) s"

BROWSER_CHECKS := tests/browser/jupyterlab_check.py tests/browser/pages_check.py \
	tests/browser/formgrader_check.py

test-browser: $(STAMP)
	$(BIN)/pytest $(BROWSER_CHECKS)

test-hub: $(STAMP)
	COURSE_HUB_TEST=1 $(BIN)/pytest -s tests/deploy/test_hub.py tests/deploy/test_lti_hub.py

# New venvs, not .venv: the course installed as its users install it (tools/edges.py).
# EDGES="newest colab" runs only those edges.
test-edges: $(STAMP)
	$(BIN)/python -m tools.edges --nbval "$(NBVAL)" $(foreach edge,$(EDGES),--only $(edge))

lint: $(STAMP)
	$(BIN)/ruff check .

unit: $(STAMP)
	$(BIN)/pytest tests -m "not hub"

quick: $(STAMP)
	@start=$$(date +%s); \
	$(BIN)/ruff check . && $(BIN)/pytest tests -q -m "not slow and not hub" && \
	echo "make quick: passed in $$(( $$(date +%s) - start )) s"

nbval: $(NBVAL_TEST_PATHS:%=nbval-%)

nbval-all: $(NBVAL_PATHS:%=nbval-%)

$(NBVAL_PATHS:%=nbval-%): nbval-%: $(STAMP)
	@echo "nbval on the $* code path: $(or $(PATH_$*),this CPU's own kernels)"
	env $(PATH_$*) $(BIN)/$(NBVAL) notebooks solutions

release: $(STAMP)
	$(BIN)/python -m course.coursedir.release $(ASSIGNMENT) $(if $(FORCE),--force)

# Writing the edition needs nbformat alone: .venv's Python once it is set up (make lab, make
# test), else a small environment of its own, build/edition-env/, with nbformat as locked.
EDITION_ENV := build/edition-env
EDITION_PYTHON := $(if $(wildcard $(STAMP)),$(BIN)/python,$(EDITION_ENV)/bin/python)
EDITION_ONLINE := $(if $(EDITION_REPOSITORY),--repository $(EDITION_REPOSITORY) --branch $(EDITION_BRANCH))

$(EDITION_ENV)/bin/python:
	@echo "make edition: a small environment to write it with, $(EDITION_ENV)/ (nbformat only)"
	@$(PYTHON) -m venv $(EDITION_ENV)
	@$(EDITION_ENV)/bin/python -m pip install --quiet --disable-pip-version-check nbformat $(LOCK)

edition: $(EDITION_PYTHON)
	@$(EDITION_PYTHON) -m course.coursedir.edition $(EDITION_ONLINE)

# Without the old lock, so that a pin moved in requirements.txt takes what it needs (for a lock
# with nothing left over from earlier pins, rm -rf .venv first).
lock:
	$(MAKE) --no-print-directory --always-make $(STAMP) UNLOCKED=1
	@echo "make lock: requirements.lock from what .venv holds now"
	@{ sed -n '1,/^$$/p' requirements.lock; $(BIN)/python -m pip freeze --all --exclude-editable \
		--disable-pip-version-check | grep -v '^pip==' | sed 's/+cpu$$//'; } > requirements.lock.new
	mv requirements.lock.new requirements.lock
	touch $(STAMP)

lectures: $(STAMP)
	$(BIN)/python -m course.coursedir.execute notebooks

bench: $(STAMP)
	$(BIN)/python -m course.bench

# The options of the grading commands, each on one line when echoed.
AUTOGRADE_OPTIONS = $(strip $(if $(UNSANDBOXED),--unsandboxed) \
	$(if $(PER_PROCESS),--per-process-limits) $(if $(JOBS),--jobs $(JOBS)) \
	$(if $(REGRADE),--regrade $(REGRADE)))
GRADES_OPTIONS = --lms-gradebook "$(LMS_GRADEBOOK)" --lms-column "$(LMS_COLUMN)" \
	$(if $(PROVISIONAL),--provisional)
LTI_GRADES_OPTIONS = $(strip $(if $(PROVISIONAL),--provisional) $(if $(REPLACE_FINAL),--replace-final))

autograde: $(STAMP)
	$(BIN)/python -m course.instructor autograde $(ASSIGNMENT) $(AUTOGRADE_OPTIONS)

feedback: $(STAMP)
	$(BIN)/python -m course.instructor feedback $(ASSIGNMENT) $(if $(PROVISIONAL),--provisional)

grades: $(STAMP)
	$(BIN)/python -m course.instructor grades $(ASSIGNMENT) $(strip $(GRADES_OPTIONS))

collect: $(STAMP)
	$(BIN)/python -m course.instructor collect $(ASSIGNMENT)

.PHONY: lti-grades
lti-grades: $(STAMP)
	$(BIN)/python -m course.lms.lti grades $(ASSIGNMENT) $(LTI_GRADES_OPTIONS)

clean:
	rm -rf autograded feedback upload grades.csv browser-screenshots .pytest_cache .ruff_cache .import_linter_cache
