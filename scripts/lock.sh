#!/usr/bin/env bash
# Regenerate the hash-pinned locks that scripts/install.sh installs from. Needs uv
# (`python3 -m pip install uv`); run after changing a dependency in pyproject.toml.
#   scripts/requirements.lock  the package's dependencies, its test tools and setuptools (to
#                              build the editable install without fetching anything), for
#                              every platform and Python 3.11+ (--universal writes markers)
#   scripts/models.lock        the two packages that only carry model files (no dependencies)
#   scripts/pip.lock           pip itself
# Arguments go to the first compile (e.g. -c constraints.txt to keep versions).
# pip checks every downloaded file against these sha256 hashes (--require-hashes).
set -euo pipefail
cd "$(dirname "$0")/.."
compile=(uv pip compile --quiet --universal --python-version 3.11 --generate-hashes
  --no-header --index-url https://pypi.org/simple)
"${compile[@]}" pyproject.toml scripts/lock-build.in --extra test -o scripts/requirements.lock "$@"
"${compile[@]}" --no-deps scripts/lock-models.in -o scripts/models.lock
"${compile[@]}" --no-deps scripts/lock-pip.in -o scripts/pip.lock
