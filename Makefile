# vigil — the two commands of the quick start, and a few more.
#   make run   set up a venv, install vigil, start the daemon and run a first command
#   make test  set up a venv with the test extra and run the whole suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test bench bench-quick clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/vigil status
	$(BIN)/vigil run --wait -- sh -c 'echo "hello from $$(tty), under a vigil guardian"'
	$(BIN)/vigil ls

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python -m tests.bench.run_all

bench-quick: $(STAMP)
	$(BIN)/python -m tests.bench.run_all --quick

clean:
	rm -rf $(VENV) build *.egg-info
