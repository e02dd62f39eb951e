"""Secrets out of captured text, before it is written anywhere (the store, the logs, a state
file): `redact(text)` replaces each secret it finds with `[redacted:KIND]`.

The provider patterns are Yelp's detect-secrets' (its regex plugins' `denylist`, kept up to
date there), taken whole-match so a token's tail never survives, plus what it lacks: the
newer Anthropic, OpenAI, GitHub, Google, npm, PyPI, Stripe and Hugging Face formats, whole
private key blocks, passwords in URLs and in assignments (`.env` lines, `--password x`,
`password = "..."` through its keyword plugin), bearer tokens, JWTs and high-entropy tokens.

Redaction errs towards removing: an over-eager match costs a word of a transcript, a missed
one a leaked key. Git hashes (lower-case hex) and ordinary identifiers are left alone.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from functools import cache

__all__ = ["find_secrets", "redact"]

Span = tuple[int, int, str]

# Not secrets, and everywhere in ordinary text: public IP addresses; and the private key
# plugin only names the header (the whole block is matched below instead).
_SKIPPED_PLUGINS = frozenset({"IPPublicDetector", "PrivateKeyDetector"})

_EXTRA: tuple[tuple[str, str], ...] = (
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9]+-[A-Za-z0-9_-]{20,}"),
    ("openai-key", r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9_]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
    ("gitlab-token", r"\bgl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|oas|agent)-[A-Za-z0-9_-]{20,}"),
    ("google-key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("google-token", r"\bya29\.[0-9A-Za-z_-]{20,}"),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}"),
    ("pypi-token", r"\bpypi-[A-Za-z0-9_-]{50,}"),
    ("stripe-key", r"\b(?:sk|rk|pk|whsec)_(?:live|test)_[0-9A-Za-z]{16,}"),
    ("slack-token", r"\bxox[abposre]-[A-Za-z0-9-]{10,}"),
    ("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/]+"),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("aws-key", r"\b(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    ("bearer-token", r"(?i)(?<=bearer )[A-Za-z0-9._~+/=-]{16,}"),
    (
        "private-key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s:,-]*)",
    ),
    ("url-password", r"(?<=://)(?:[^:/?#@\s]*):([^@/\s]+)(?=@)"),
)

_SECRET_WORDS = (
    r"pass(?:word|wd|phrase)?|pwd|secret|token(?!iz)|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|client[_-]?secret|credentials?|auth|session[_-]?key|dsn|"
    r"signing[_-]?key|encryption[_-]?key|webhook"
)
# `NAME=value` on a line of its own, the name saying what the value is (`.env`, `export`).
_ENV_LINE = re.compile(
    rf"(?m)^[ \t]*(?:export[ \t]+)?[A-Z0-9_]*(?i:{_SECRET_WORDS})[A-Z0-9_]*[ \t]*=[ \t]*"
    r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s#]+)"
)
# `password = "x"`, `token: abc123`, `?api_key=...`: in code, config and URLs.
_ASSIGNMENT = re.compile(
    rf"(?i)(?<![\w.-])[\w.-]*(?:{_SECRET_WORDS})[\w.-]*[\"']?[ \t]*(?::=|=>|=|:)[ \t]*"
    r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s,;&\"'()\[\]{}<>]+)"
)
_FLAG = re.compile(
    rf"(?i)(?<![\w-])--?(?:{_SECRET_WORDS})(?:=|[ \t]+)(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']+)"
)
_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{32,}={0,2}")
_STAMP = re.compile(r"(?<![0-9])\d{8}T\d{6}Z?(?![0-9])")
_PLACEHOLDER = re.compile(
    r"(?i)^(?:none|null|nil|true|false|undefined|\*+|x+|\.\.\.|changeme|redacted.*|"
    r"<[^>]*>|\$\{?[\w.:-]+\}?|%\(?\w+\)?s?|\{\{.*\}\}|\[redacted:[\w-]+\])$"
)
# `password: str`, `token=self.token`, `key=cfg.api_key_v2`: a name, not a value.
_NAME = re.compile(r"^(?:[A-Za-z_]+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)$")
_NUMBER = re.compile(r"^v?[\d.]+$")  # a count, a version
_REDACTED = re.compile(r"\[redacted:[\w-]+\]")


@cache
def _library_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """detect-secrets' regex plugins, one (kind, pattern) each."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    out: list[tuple[str, re.Pattern[str]]] = []
    classes: list[type] = list(get_mapping_from_secret_type_to_class().values())
    for cls in classes:
        if not issubclass(cls, RegexBasedDetector) or cls.__name__ in _SKIPPED_PLUGINS:
            continue
        kind = str(cls.secret_type).lower().replace(" ", "-")  # "GitHub Token": github-token
        # A class attribute on each plugin (an abstract property on their base).
        out.extend((kind, pattern) for pattern in getattr(cls, "denylist", ()))
    return tuple(out)


@cache
def _extra_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((kind, re.compile(pattern)) for kind, pattern in _EXTRA)


@cache
def _keyword_detector() -> object:
    from detect_secrets.plugins.keyword import KeywordDetector

    return KeywordDetector()


def _entropy(token: str) -> float:
    counts = Counter(token)
    return -sum(n / len(token) * math.log2(n / len(token)) for n in counts.values())


def _value_span(match: re.Match[str], *, loose: bool) -> Span | None:
    """The assigned value's span, quotes off; None where it is no secret: a placeholder, a
    name or call (`password: str`, `token=self.token`), a sentence. `loose` (a `.env` line,
    a flag): any other value is one; else an unquoted value must mix letters and digits."""
    start, end = match.span(1)
    value = match.group(1)
    quoted = value[:1] in "\"'" and value[-1:] == value[:1] and len(value) >= 2
    if quoted:
        start, end, value = start + 1, end - 1, value[1:-1]
    if (
        len(value) < 4
        or _NUMBER.match(value)
        or _PLACEHOLDER.match(value)
        or _NAME.match(value)
        or any(c in value for c in " \t<>{}()[]`")
        or "$(" in value
    ):
        return None
    if not (loose or quoted) and not (
        any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
    ):
        return None
    return start, end, "assigned-secret"


def _pattern_spans(text: str) -> Iterator[Span]:
    for kind, pattern in (*_library_patterns(), *_extra_patterns()):
        for m in pattern.finditer(text):
            # A group is the secret when it is long enough to be one (an AWS secret, a URL's
            # password); a short one is a prefix (`ghp`), and then the whole match is.
            group = next((g for g in range(1, (pattern.groups or 0) + 1) if m.group(g)), 0)
            start, end = m.span(group) if group and len(m.group(group)) >= 6 else m.span()
            while start < end and text[start] in " \t\r\n\"'=:":
                start += 1
            while end > start and text[end - 1] in " \t\r\n\"'":
                end -= 1
            if end > start:
                yield start, end, kind


def _assignment_spans(text: str) -> Iterator[Span]:
    for pattern, loose in ((_ENV_LINE, True), (_ASSIGNMENT, False), (_FLAG, True)):
        for m in pattern.finditer(text):
            span = _value_span(m, loose=loose)
            if span is not None:
                yield span


def _keyword_spans(text: str) -> Iterator[Span]:
    detector = _keyword_detector()
    offset = 0
    for line in text.splitlines(keepends=True):
        lowered = line.lower()
        if any(w in lowered for w in ("pass", "pwd", "secret", "key", "token", "auth")):
            found = detector.analyze_line(filename="capture.txt", line=line, line_number=0)  # type: ignore[attr-defined]
            for secret in found:
                value = secret.secret_value or ""
                if len(value) >= 4 and not _PLACEHOLDER.match(value):
                    for m in re.finditer(re.escape(value), line):
                        yield offset + m.start(), offset + m.end(), "keyword-secret"
        offset += len(line)


def _entropy_spans(text: str) -> Iterator[Span]:
    """Long tokens of mixed case and digits whose characters are near random: a key whose
    format no pattern knows. Lower-case hex (git hashes, digests) and words are left."""
    for m in _TOKEN.finditer(text):
        token = m.group().strip("=-_/+")
        if len(token) < 32 or token.count("/") > 1:
            continue  # short, or a path
        start = m.start() + m.group().index(token)
        # A compact UTC timestamp (`20261203T135914Z`, in a run folder's name) is no key;
        # what is left around it is judged alone.
        judged = _STAMP.sub("", token)
        if len(judged) < 32:
            continue
        has_upper = any(c.isupper() for c in judged)
        has_lower = any(c.islower() for c in judged)
        has_digit = sum(c.isdigit() for c in judged) >= 2
        if has_upper and has_lower and has_digit and _entropy(judged) >= 4.5:
            yield start, start + len(token), "high-entropy"


def find_secrets(text: str) -> list[Span]:
    """Every secret's (start, end, kind) in `text`, overlapping spans merged, in order."""
    spans = sorted(
        (
            *_pattern_spans(text),
            *_assignment_spans(text),
            *_keyword_spans(text),
            *_entropy_spans(text),
        )
    )
    marked = [m.span() for m in _REDACTED.finditer(text)]
    merged: list[Span] = []
    for start, end, kind in spans:
        if any(s <= start and end <= e for s, e in marked):
            continue  # already redacted: redacting twice changes nothing
        if merged and start <= merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], end), last[2])
        else:
            merged.append((start, end, kind))
    return merged


def redact(text: str) -> str:
    """`text` with each secret replaced by `[redacted:KIND]`."""
    if not text:
        return text
    out = []
    at = 0
    for start, end, kind in find_secrets(text):
        out.append(text[at:start])
        out.append(f"[redacted:{kind}]")
        at = end
    out.append(text[at:])
    return "".join(out)
