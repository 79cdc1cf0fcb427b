# One-command set-up: every target creates the virtualenv and installs the package first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

export JAX_PLATFORMS ?= cpu
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: install demo test bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	@echo "== a correct rewrite: (AB)^T against B^T A^T =="
	@$(VENV)/bin/tv-mlir verify testdata/pairs/dot_transpose.a.mlir testdata/pairs/dot_transpose.b.mlir; echo "(exit code $$?)"
	@echo
	@echo "== two variance forms inside rsqrt (rsqrt is uninterpreted) =="
	@$(VENV)/bin/tv-mlir verify testdata/pairs/variance_rsqrt.a.mlir testdata/pairs/variance_rsqrt.b.mlir; echo "(exit code $$?)"
	@echo
	@echo "== a wrong rewrite: x / y * y against x =="
	@$(VENV)/bin/tv-mlir verify testdata/pairs/div_mul.a.mlir testdata/pairs/div_mul.b.mlir; echo "(exit code $$?)"
	@echo
	@echo "== a 200-op program against a 270-op algebraic rewrite of it =="
	@$(VENV)/bin/tv-mlir verify testdata/big/big200.a.mlir testdata/big/big200.b.mlir; echo "(exit code $$?)"
	@echo
	@echo "== an op without semantics =="
	@$(VENV)/bin/tv-mlir verify testdata/hand/unsupported_cholesky.a.mlir testdata/hand/unsupported_cholesky.b.mlir; echo "(exit code $$?)"

test: $(STAMP)
	$(PY) -m pytest -q tests

bench: $(STAMP)
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info
