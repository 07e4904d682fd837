# Two entry points (see README.md): `make course` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

export JUPYTER_PREFER_ENV_PATH := 1
export OMP_NUM_THREADS := 1
export OPENBLAS_NUM_THREADS := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: course figures test test-fast refresh lab clean

# The environment: a virtualenv with the exact pins of requirements.txt and the package, editable.
$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] >= (3, 11), "Python 3.11 or newer is needed, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet pip==26.3
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (ipykernel)" >/dev/null
	@touch $(STAMP)

## Run every lesson and lab (executed copies and figures go to build/)
course: $(STAMP)
	$(PY) -m ragcourse run
	$(PY) -m ragcourse run labs

## Regenerate figures/ at the course seed, and figures/labs/ (instructors)
figures: $(STAMP)
	$(PY) -m ragcourse figures
	$(PY) -m ragcourse figures labs

## Re-execute notebooks in place to refresh their stored outputs (maintainers)
refresh: $(STAMP)
	$(PY) -m ragcourse refresh
	$(PY) -m ragcourse refresh labs

## All tests: package, nbval, documented outputs, hygiene, other seeds, command line, browser
test: $(STAMP)
	TQDM_DISABLE=1 $(PY) -m pytest -ra --nbval --nbval-current-env -p no:cacheprovider tests notebooks

## Package tests only (seconds)
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not notebooks and not browser" tests

## Open the course in JupyterLab
lab: $(STAMP)
	$(VENV)/bin/jupyter lab notebooks $(if $(filter 0,$(shell id -u)),--allow-root,)

clean:
	rm -rf build test-output .pytest_cache
