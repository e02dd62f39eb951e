"""Redaction of captured text (imprint.redact): real-format secrets out, ordinary text kept."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from imprint.redact import find_secrets, redact
from tests.support.secrets_corpus import benign_strings, hostile_lines, real_secrets, secret_corpus

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


def _caught(line: str, secret: str) -> bool:
    out = redact(line)
    return "[redacted:" in out and not any(p in out for p in _pieces(secret))


@pytest.mark.parametrize("held_out", [False, True], ids=["tuned", "held-out"])
def test_at_least_97_percent_of_the_real_format_corpus_is_caught(held_out: bool) -> None:
    """Of the real-format corpus (issue 43 finding 8: `mysql -p`, `curl -u`, `sshpass -p`,
    Basic auth, `docker login`, DigitalOcean, Slack app, Mailgun, Databricks, Airtable,
    Datadog, database URLs with `/`, `.env` values with parentheses, AWS secret keys with
    several `/`, and the common providers), at least 97 % is redacted whole, in the part the
    rules were tuned on and in the part held out (main caught 88 % and 70 %)."""
    corpus = real_secrets(held_out=held_out)
    missed = [(s.form, s.line[:80]) for s in corpus if not _caught(s.line, s.secret)]
    assert len(missed) <= 0.03 * len(corpus), missed


@pytest.mark.parametrize("held_out", [False, True], ids=["tuned", "held-out"])
def test_at_most_2_percent_of_the_look_alikes_are_touched(held_out: bool) -> None:
    """npm and SRI integrity hashes, go.sum and lock file hashes, git SHAs, UUIDs, base64
    images, paths, URLs without credentials, versions, timestamps and code identifiers pass
    unchanged, all but at most 2 % (main touched 7 %, most of them integrity hashes)."""
    corpus = benign_strings(held_out=held_out)
    touched = [(b.form, redact(b.text)[:100]) for b in corpus if redact(b.text) != b.text]
    assert len(touched) <= 0.02 * len(corpus), touched


def test_the_corpus_has_300_secrets_and_200_look_alikes_in_every_form_named() -> None:
    """The corpus is big enough to measure a percentage on, and holds every form the attack
    review found missed."""
    secrets = real_secrets() + real_secrets(held_out=True)
    benign = benign_strings() + benign_strings(held_out=True)
    assert len(secrets) >= 300 and len(benign) >= 200
    forms = {s.form for s in secrets}
    for form in (
        "mysql-p", "curl-u", "sshpass", "basic-auth-header", "docker-login", "digitalocean",
        "slack-app", "mailgun", "databricks", "airtable", "datadog-bare", "db-url-slash",
        "env-parentheses", "aws-secret-key", "gcp-api-key", "azure-client-secret",
        "github-classic", "gitlab-pat", "stripe-secret", "openai-project", "anthropic",
        "npm-token", "pypi-token", "jwt", "private-key", "cli-password-flag", "env-line",
    ):  # fmt: skip
        assert form in forms, form
    assert {"npm-integrity", "git-sha", "uuid", "base64-image", "file-path"} <= {
        b.form for b in benign
    }
    several = [s for s in secrets if s.form == "aws-secret-key" and s.secret.count("/") >= 2]
    assert several, "no AWS secret key with two or more slashes"


def _cpu_ms(text: str) -> float:
    """The least CPU time of three redactions of `text`, in ms (CPU time, so a loaded
    machine's waiting does not count)."""
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        redact(text)
        best = min(best, time.process_time() - t0)
    return best * 1000.0


def test_a_hostile_line_costs_time_in_proportion_to_its_length() -> None:
    """A 4,000-character line of secret words, assignments, long tokens or key headers (main
    took 2.4 s on `password` repeated: the daemon stalled) is redacted in under 50 ms of CPU,
    and one 8 times longer in at most 24 times as long (linear: 8; quadratic: 64)."""
    short, long = hostile_lines(4000), hostile_lines(32000)
    redact(short["secret words"])  # the patterns compiled once, outside the timing
    slow = {}
    for name, line in short.items():
        a, b = _cpu_ms(line), _cpu_ms(long[name])
        if a > 50.0 or b > 24 * max(a, 1.0):
            slow[name] = (round(a, 1), round(b, 1))
    assert not slow, slow


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
        '"versions": {"detect-secrets": "1.5.0", "passlib": "1.7.4"}',
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
