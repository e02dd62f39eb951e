#!/usr/bin/env bash
# The whole test suite: install, lint, type-check, then every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# A client nobody here wrote, for tests/integration/test_inspector.py.
if command -v npm >/dev/null 2>&1; then
  npm install --prefix .ci/node --no-audit --no-fund --loglevel=error \
    @modelcontextprotocol/inspector@0.15.0 >/dev/null
fi
.venv/bin/ruff check imprint tests benchmark
.venv/bin/ruff format --check imprint tests benchmark
.venv/bin/mypy
# The layering: a new upward import (or mcp below the tools) fails the build.
.venv/bin/lint-imports
set +e
.venv/bin/python -m pytest "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$rc"
