"""Redaction of captured text (imprint.redact): real-format secrets out, ordinary text kept."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from imprint.redact import find_secrets, redact
from tests.secrets_corpus import secret_corpus

ROOT = Path(__file__).resolve().parent.parent


def _pieces(secret: str, width: int = 8) -> list[str]:
    return [secret[i : i + width] for i in range(max(1, len(secret) - width + 1))]


@pytest.mark.parametrize(("line", "secret"), secret_corpus(), ids=lambda v: str(v)[:24])
def test_every_secret_of_the_corpus_is_redacted(line: str, secret: str) -> None:
    """No secret of the corpus, nor any 8 characters of one, survives redaction."""
    out = redact(line)
    assert "[redacted:" in out
    survived = [p for p in _pieces(secret) if p in out]
    assert not survived, f"{out!r} keeps {survived[:3]}"


def test_the_corpus_covers_the_providers_named_in_the_issue() -> None:
    """The corpus has OpenAI, Anthropic, GitHub, GitLab, Slack, Stripe, AWS, Google, npm,
    PyPI keys, private keys, URL and assignment passwords, .env lines and JWTs."""
    text = "\n".join(line for line, _ in secret_corpus())
    for marker in (
        "sk-proj-", "sk-ant-", "ghp_", "github_pat_", "glpat-", "xoxb-", "sk_live_", "AKIA",
        "AIza", "npm_", "pypi-", "PRIVATE KEY", "postgres://admin:", "password =", "export ",
        "eyJ",
    ):  # fmt: skip
        assert marker in text, marker


@pytest.mark.parametrize(
    "text",
    [
        "def retry(fn, attempts=3):\n    return fn()",
        "The password field is validated on submit; the token expires after an hour.",
        "password: str = ''\ntoken = self._next_token()\napi_key = os.environ['API_KEY']",
        "commit 4d1dd97a3f2b9c8e1d0f6a5b4c3d2e1f0a9b8c7d merged into main",
        "sha256:2c3a3fa2743d8535d832ec61c2054a1641f41775aa7c556758a109941e33e4fc",
        "see imprint/daemon/owner.py and tests/integration/test_kills.py",
        'MAX_TOKENS = 500\nTOKENIZER_NAME = \'bert\'\n"tokenizers": "0.23.3"',
        "export PATH=$HOME/.local/bin:$PATH\nAPI_KEY=${API_KEY}\nSECRET=<your secret here>",
        "getAttributeNodeNSWithQualifiedName and camelCaseIdentifiersAreFine",
        "[code-search-20261203T135914Z](code-search-20261203T135914Z/README.md)",
        "see benchmark/published/near-duplicate-20261202T041655Z/README.md for the run",
    ],
)
def test_ordinary_code_and_prose_are_left_alone(text: str) -> None:
    """Code, prose, hashes, paths, placeholders and names pass through unchanged."""
    assert redact(text) == text


def test_redacting_twice_changes_nothing() -> None:
    """Redacted text redacted again is the same text (a replayed capture writes the same)."""
    text = "\n".join(line for line, _ in secret_corpus())
    once = redact(text)
    assert redact(once) == once


def test_a_private_key_block_goes_whole_even_when_cut_short() -> None:
    """A private key block is redacted from its header to its end, and a block cut short
    (a trimmed tool output) to the end of its base64 lines."""
    body = "MIIEowIBAAKCAQEA7x" + "Qk9vZ3Vz" * 7
    cut = f"cat id_rsa\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n{body}"
    out = redact(cut)
    assert body[:12] not in out
    assert out.startswith("cat id_rsa\n")


def test_false_positives_on_the_repositorys_own_files_are_only_its_test_secrets() -> None:
    """Over the repository's own source and docs, every line redaction touches is one of the
    fake secrets the tests plant (sk-, tok-, hunter2, ONE-TIME-SECRET...), never ordinary
    code: at most 20 lines in the whole tree, none under imprint/ or docs/."""
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    suffixes = (".py", ".md", ".toml", ".json", ".txt", ".sh", ".html", ".yml")
    hit: list[tuple[str, str]] = []
    for rel in listed:
        if not rel.endswith(suffixes) or rel.endswith("secrets_corpus.py") or "lock" in rel:
            continue
        try:
            text = (ROOT / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for start, end, _kind in find_secrets(text):
            line_start = text.rfind("\n", 0, start) + 1
            line_end = text.find("\n", end)
            hit.append((rel, text[line_start : line_end if line_end >= 0 else None]))
    assert len(hit) <= 20, hit
    assert not [h for h in hit if h[0].startswith(("imprint/", "docs/"))], hit
