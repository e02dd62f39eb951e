"""Secrets out of captured text, before it is written anywhere (the store, the logs, a state
file): `redact(text)` replaces each secret it finds with `[redacted:KIND]`.

The provider patterns are Yelp's detect-secrets' (its regex plugins' `denylist`, kept up to
date there), taken whole-match so a token's tail never survives, plus what it lacks: the
newer Anthropic, OpenAI, GitHub, Google, npm, PyPI, Stripe and Hugging Face formats, whole
private key blocks, passwords in URLs and in assignments (`.env` lines, `--password x`,
`password = "..."` through its keyword plugin), bearer tokens, JWTs and high-entropy tokens;
and the forms people type: CLI password flags (`mysql -p`, `sshpass -p`, `curl -u`, `echo x
| docker login`), Basic auth headers, `.netrc` lines, DigitalOcean, Slack app, Mailgun,
Databricks, Airtable, Datadog and some twenty other providers' keys.

Every rule reads bounded windows of the text and none backtracks without a bound, so a line
costs time in proportion to its length (a 4,000-character line of secret words took 2.6 s).
The corpus and the figures: `tests/support/secrets_corpus.py`, `benchmark/redaction.py`.

Redaction errs towards removing: an over-eager match costs a word of a transcript, a missed
one a leaked key. Git hashes (lower-case hex) and ordinary identifiers are left alone.
"""

from __future__ import annotations

import base64
import bisect
import math
import re
from collections import Counter
from collections.abc import Iterator
from functools import cache

__all__ = ["find_secrets", "redact", "redact_counted"]

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
    ("stripe-key", r"\b(?:sk|rk|pk|whsec)_(?:live|test)_[0-9A-Za-z]{16,}|\bwhsec_[A-Za-z0-9]{24,}"),
    ("slack-token", r"\bxox[abposre]-[A-Za-z0-9-]{10,}|\bxapp-[A-Za-z0-9-]{20,}"),
    ("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/]+"),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("aws-key", r"\b(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}\b"),
    # The secret key has no prefix: `aws` and `secret` or `key` close before it say so.
    (
        "aws-secret",
        r"(?i)aws.{0,20}?(?:secret|key).{0,24}?[=:\s\"']([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    ),
    ("azure-storage-key", r"(?i)AccountKey=([A-Za-z0-9+/]{86}==)"),
    (
        "azure-client-secret",
        r"(?<![\w~.-])[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![\w~.-])",
    ),
    ("digitalocean-token", r"\bdo[opr]_v1_[a-f0-9]{64}\b"),
    ("mailgun-key", r"\bkey-[a-f0-9]{32}\b"),
    ("databricks-token", r"\bdapi[a-f0-9]{32}(?:-\d)?\b"),
    ("airtable-token", r"\bpat[A-Za-z0-9]{14}\.[a-f0-9]{64}\b"),
    ("shopify-token", r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b"),
    ("linear-key", r"\blin_(?:api|oauth)_[A-Za-z0-9]{40}\b"),
    ("notion-token", r"\bntn_[A-Za-z0-9]{40,}|\bsecret_[A-Za-z0-9]{43}\b"),
    ("sentry-token", r"\bsntry[su]_[A-Za-z0-9_=+/-]{40,}"),
    ("grafana-token", r"\bgl(?:sa|c)_[A-Za-z0-9_+/=-]{32,}"),
    ("postman-key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"),
    ("newrelic-key", r"\bNR(?:AK|II|JS|RA)-[A-Za-z0-9]{19,32}\b"),
    ("docker-token", r"\bdckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}"),
    ("terraform-token", r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}"),
    ("doppler-token", r"\bdp\.(?:st|sa|ct|scim|audit|pt)\.[A-Za-z0-9_.-]{40,}"),
    ("pulumi-token", r"\bpul-[a-f0-9]{40}\b"),
    ("groq-key", r"\bgsk_[A-Za-z0-9]{48,}"),
    ("replicate-token", r"\br8_[A-Za-z0-9]{37}\b"),
    ("xai-key", r"\bxai-[A-Za-z0-9]{70,}"),
    ("perplexity-key", r"\bpplx-[A-Za-z0-9]{48,}"),
    ("age-key", r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b"),
    ("mapbox-token", r"\bsk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}"),
    ("square-token", r"\bEAAA[A-Za-z0-9_-]{60}|\bsq0(?:atp|csp)-[A-Za-z0-9_-]{22,}"),
    ("heroku-key", r"\bHRKU-[A-Za-z0-9_-]{30,}"),
    ("atlassian-token", r"\bATATT3[A-Za-z0-9_=+/-]{150,}"),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    ("bearer-token", r"(?i)(?<=bearer )[A-Za-z0-9._~+/=-]{16,}"),
    (
        "auth-header",
        r"(?i)\bauthorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:token|apikey|key|sso-key)[ \t]+"
        r"([A-Za-z0-9._~+/=-]{16,})",
    ),
    # A Datadog key is bare hex, a git hash's alphabet: only `datadog` or `dd-` before it
    # makes it one.
    (
        "datadog-key",
        r"(?i)(?:datadog|\bdd[-_ ])[^\n]{0,40}?"
        r"(?<![0-9a-f])([a-f0-9]{40}|[a-f0-9]{32})(?![0-9a-f])",
    ),
    # Passwords typed on a command line: the command names the flag's meaning.
    (
        "cli-password",
        r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mariadb)\b[^\n|;&]{0,200}?"
        r"(?<=\s)-p(?:'([^'\n]+)'|\"([^\"\n]+)\"|([^\s'\"-][^\s'\"]*))",
    ),
    (
        "cli-password",
        r"\bsshpass[ \t]+-p[ \t]*(?:'([^'\n]+)'|\"([^\"\n]+)\"|([^\s'\"]+))",
    ),
    (
        "cli-password",
        r"\b(?:login|redis-cli)\b[^\n|;&]{0,200}?(?<=\s)(?:-p|-a|--password)(?:[ \t]+|=)"
        r"(?:'([^'\n]+)'|\"([^\"\n]+)\"|([^\s'\"-][^\s'\"]*))",
    ),
    (
        "cli-password",
        r"\b(?:echo|printf)[ \t]+(?:-[neE]+[ \t]+)?(?:'([^'\n]+)'|\"([^\"\n]+)\"|([^\s|'\"]+))"
        r"[ \t]*\|[^\n]{0,200}?(?:login|password-stdin|passwd)",
    ),
    ("cli-password", r"(?<![\w-])-pass(?:in|out)?[ \t]+pass:([^\s'\"]+)"),
    ("cli-password", r"\bhtpasswd(?:[ \t]+-[A-Za-z]+)*+[ \t]+-?\S+[ \t]+\S+[ \t]+([^\s-]\S*)"),
    (
        "cli-password",
        r"(?<![\w-])(?:-u|--user|--proxy-user)(?:[ \t]+|=)[\"']?[^\s:'\"]{1,64}:([^\s'\"]+)",
    ),
    # `.netrc` entries, one per line: a host, a login and a password, each after its word.
    ("netrc-password", r"\b(?:machine|default)\b[^\n]{0,200}?\bpassword[ \t]+(\S+)"),
    # A URL's userinfo; its password may hold a slash (people write them so), but a host,
    # a port and a path before an at sign are none.
    ("url-password", r"://[^:/?#@\s]{0,64}:(?!\d{1,5}(?:/|@|$))([^@\s]{1,200}+)@"),
)

_SECRET_WORDS = (
    r"pass(?:word|wd|phrase)?|pwd|secret|token(?!iz)|api[_-]?key|apikey|access[_-]?key|"
    r"account[_-]?key|private[_-]?key|client[_-]?secret|credentials?|auth|session[_-]?key|"
    r"dsn|signing[_-]?key|encryption[_-]?key|webhook"
)
_SECRET_WORD = re.compile(rf"(?i){_SECRET_WORDS}")
_VALUE = r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s#]+)"
# `NAME=value` on a line of its own, the name saying what the value is (`.env`, `export`).
# Names are matched whole (possessive) and judged after, so a long run of secret words
# costs one pass, not one per word.
_ENV_LINE = re.compile(rf"(?m)^[ \t]*+(?:export[ \t]+)?([A-Z0-9_]++)[ \t]*=[ \t]*{_VALUE}")
# `password = "x"`, `token: abc123`, `?api_key=...`: in code, config and URLs.
# The lookahead (bounded) keeps a name without a secret word (`http:` of a URL) from
# consuming the value that holds one (`?token=...`).
_ASSIGNMENT = re.compile(
    rf"(?<![\w.-])(?=[\w.-]{{0,200}}?(?i:{_SECRET_WORDS}))([\w.-]{{1,200}}+)[\"']?[ \t]*+"
    r"(?::=|=>|=|:)[ \t]*+"
    r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s,;&\"'()\[\]{}<>]++)"
)
_FLAG = re.compile(
    rf"(?i)(?<![\w-])--?(?:{_SECRET_WORDS})(?:=|[ \t]+)(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']+)"
)
# `  password hunter2x` alone on a line: the second line of a `.netrc` entry.
_NETRC_LINE = re.compile(r"(?m)^[ \t]+password[ \t]+(\S+)[ \t]*$")
# An Authorization header's Basic scheme carries the user and the password joined by a
# colon, in base64.
_BASIC = re.compile(r"(?i)\bbasic[ \t]+([A-Za-z0-9+/]{8,}+={0,2})(?![\w+/=])")
_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{32,}+={0,2}")
_STAMP = re.compile(r"(?<![0-9])\d{8}T\d{6}Z?(?![0-9])")
# Digests people print beside what they name (npm/SRI integrity, go.sum, lock files, a data
# URL's payload): long, random and public.
_DIGEST_BEFORE = re.compile(r"(?i)(?:sha(?:1|224|256|384|512)[:-]|h1:|base64,|md5[:-])$")
_DIGEST_PREFIX = re.compile(r"(?i)^sha(?:1|224|256|384|512)-")
_PATH_PART = re.compile(r"^(?:[A-Za-z][a-z]+(?:[A-Z][a-z]+)*\d{0,4}|[a-z0-9_.-]+|[A-Z0-9_]+)$")
_PLACEHOLDER = re.compile(
    r"(?i)^(?:none|null|nil|true|false|undefined|\*+|x+|\.\.\.|changeme|redacted.*|"
    r"<[^>]*>|\$\{?[\w.:-]+\}?|%\(?\w+\)?s?|\{\{.*\}\}|\[redacted:[\w-]+\])$"
)
# `password: str`, `token=self.token`, `key=cfg.api_key_v2`: a name, not a value.
_NAME = re.compile(r"^(?:[A-Za-z_]+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)$")
# ... though `nqeL.Yv6CXqHF5` is a password with a dot: a name's parts are not random.
_RANDOM_PART = re.compile(r"(?=[^.]*[A-Z])(?=[^.]*[a-z])(?=[^.]*\d)[A-Za-z0-9_]{4,}")
_CALL = re.compile(r"^[A-Za-z_][A-Za-z_.]*\d?\(")  # `get_token()`, `re.compile(...`
# Typed on a command line or in a URL: judged like an assigned value.
_TYPED_KINDS = frozenset(
    {"cli-password", "url-password", "netrc-password", "basic-auth-credentials"}
)
_WORD = re.compile(r"^[A-Za-z]+[`,.;:)]*$")  # `password`, `PASS`,`: a word in prose
_NUMBER = re.compile(r"^v?[\d.]+$")  # a count, a version
_REDACTED = re.compile(r"\[redacted:[\w-]+\]")
_PRIVATE_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PRIVATE_END = re.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_KEY_BODY = re.compile(r"[A-Za-z0-9+/=\s:,-]*+")

# Every rule reads at most this many characters at once, so a rule that backtracks costs a
# bounded amount per window and a line of any length costs time in proportion to it (the
# attack review's 4,000-character line took 2.6 s). A line longer than a window is read in
# windows that overlap by `_OVERLAP`, so a secret up to that long is whole in one of them.
_WINDOW = 2048
_OVERLAP = 512
# detect-secrets' keyword plugin backtracks on long lines (quadratic in a line of secret
# words); it reads lines up to this long, where the assignment rules above read the rest.
_KEYWORD_LINE_MAX = 400


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


def _windows(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) windows over `text`: whole lines packed up to `_WINDOW` characters; a
    longer line cut into windows that overlap by `_OVERLAP`."""
    at, n = 0, len(text)
    while at < n:
        end = min(n, at + _WINDOW)
        if end < n:
            cut = text.rfind("\n", at, end)
            if cut < at:  # no line ends in this window: a long line, read in pieces
                yield at, end
                at = end - _OVERLAP
                continue
            end = cut + 1
        yield at, end
        at = end


def _value_span(match: re.Match[str], group: int, *, loose: bool) -> Span | None:
    """The assigned value's span, quotes off; None where it is no secret: a placeholder, a
    name or call (`password: str`, `token=self.token`), a sentence. `loose` (a `.env` line,
    a flag): any other value is one; else an unquoted value must mix letters and digits."""
    start, end = match.span(group)
    value = match.group(group)
    quoted = value[:1] in "\"'" and value[-1:] == value[:1] and len(value) >= 2
    if quoted:
        start, end, value = start + 1, end - 1, value[1:-1]
    if (
        len(value) < 4
        or _NUMBER.match(value)
        or _PLACEHOLDER.match(value)
        or (_NAME.match(value) and not ("." in value and _RANDOM_PART.search(value)))
        or _CALL.match(value)
        or any(c in value for c in " \t<>{}`")
        or "$(" in value
    ):
        return None
    # Brackets in a bare value are code (`token=f(x)`, `key=[a]`); quoted or on a `.env`
    # line they are a password's characters.
    if not (loose or quoted) and any(c in value for c in "()[]"):
        return None
    if not quoted and any(c in value for c in "\"'"):
        return None  # `("api_key",)`: code, not a value
    if not (loose or quoted) and not (
        any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
    ):
        return None
    return start, end, "assigned-secret"


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start] in " \t\r\n\"'=:":
        start += 1
    while end > start and text[end - 1] in " \t\r\n\"'":
        end -= 1
    return start, end


def _pattern_spans(text: str, ws: int, we: int) -> Iterator[Span]:
    for kind, pattern in (*_library_patterns(), *_extra_patterns()):
        for m in pattern.finditer(text, ws, we):
            # A group is the secret when it is long enough to be one (an AWS secret, a URL's
            # password); a short one is a prefix (`ghp`), and then the whole match is.
            group = next((g for g in range(1, (pattern.groups or 0) + 1) if m.group(g)), 0)
            value = m.group(group) if group else ""
            if group and (len(value) >= 6 or kind in _TYPED_KINDS):
                start, end = m.span(group)
                if kind in _TYPED_KINDS and (
                    len(value) < 4
                    or value.isdigit()
                    or _PLACEHOLDER.match(value)
                    or _WORD.match(value)
                    or any(c.isspace() or c in "`\"'" for c in value)
                ):
                    continue  # a uid and gid, a shell variable, an empty flag
            else:
                start, end = m.span()
            start, end = _trimmed(text, start, end)
            if end > start:
                yield start, end, kind


def _assignment_spans(text: str, ws: int, we: int) -> Iterator[Span]:
    for pattern, loose in ((_ENV_LINE, True), (_ASSIGNMENT, False)):
        for m in pattern.finditer(text, ws, we):
            if _SECRET_WORD.search(m.group(1)):
                span = _value_span(m, 2, loose=loose)
                if span is not None:
                    yield span
    for pattern, loose in ((_FLAG, True), (_NETRC_LINE, False)):
        for m in pattern.finditer(text, ws, we):
            span = _value_span(m, 1, loose=loose)
            if span is not None:
                yield span
    for m in _BASIC.finditer(text, ws, we):
        try:
            decoded = base64.b64decode(m.group(1) + "==", validate=False)
        except ValueError:
            continue
        if b":" in decoded:  # `user:password`, not the word "basic" before a long word
            yield m.start(1), m.end(1), "basic-auth"


def _keyword_spans(text: str) -> Iterator[Span]:
    detector = _keyword_detector()
    offset = 0
    for line in text.splitlines(keepends=True):
        lowered = line.lower()
        if len(line) <= _KEYWORD_LINE_MAX and any(
            w in lowered for w in ("pass", "pwd", "secret", "key", "token", "auth")
        ):
            found = detector.analyze_line(filename="capture.txt", line=line, line_number=0)  # type: ignore[attr-defined]
            for secret in found:
                value = secret.secret_value or ""
                # `"detect-secrets": "1.5.0"`: a package's version, not its secret.
                if len(value) >= 4 and not _PLACEHOLDER.match(value) and not _NUMBER.match(value):
                    for m in re.finditer(re.escape(value), line):
                        yield offset + m.start(), offset + m.end(), "keyword-secret"
        offset += len(line)


def _is_path(token: str) -> bool:
    """`a/b/c` whose parts are words (`src/components/Button`), not base64's random runs."""
    parts = [p for p in token.split("/") if p]
    if len(parts) < 3:
        return False
    wordy = sum(1 for p in parts if _PATH_PART.match(p))
    return wordy * 3 >= len(parts) * 2


def _entropy_spans(text: str, ws: int, we: int) -> Iterator[Span]:
    """Long tokens of mixed case and digits whose characters are near random: a key whose
    format no pattern knows. Lower-case hex (git hashes, digests), words, paths and the
    digests named as such (`sha512-...`, `h1:...`, `base64,...`) are left."""
    for m in _TOKEN.finditer(text, ws, we):
        raw = m.group()
        if _DIGEST_PREFIX.match(raw) or _DIGEST_BEFORE.search(
            text, max(0, m.start() - 8), m.start()
        ):
            continue
        token = raw.strip("=-_/+")
        if len(token) < 32 or _is_path(token):
            continue  # short, or a path
        start = m.start() + raw.index(token)
        # A compact UTC timestamp (`20261203T135914Z`, in a run folder's name) is no key;
        # what is left around it is judged alone.
        judged = _STAMP.sub("", token).replace("/", "")
        if len(judged) < 32:
            continue
        has_upper = any(c.isupper() for c in judged)
        has_lower = any(c.islower() for c in judged)
        has_digit = sum(c.isdigit() for c in judged) >= 2
        if has_upper and has_lower and has_digit and _entropy(judged) >= 4.5:
            yield start, start + len(token), "high-entropy"


def _private_key_spans(text: str) -> Iterator[Span]:
    """Each private key block from its header to its end line, or, cut short (a trimmed
    tool output), to the end of its base64 lines. One pass: every end line is found once."""
    ends = [m.end() for m in _PRIVATE_END.finditer(text)]
    covered = 0
    for m in _PRIVATE_BEGIN.finditer(text):
        if m.start() < covered:
            continue  # inside the block before
        at = bisect.bisect_left(ends, m.end())
        nxt = text.find("-----BEGIN", m.end())
        if at < len(ends) and (nxt < 0 or ends[at] <= nxt):
            end = ends[at]
        else:
            body = _KEY_BODY.match(text, m.end())
            end = body.end() if body else m.end()
        covered = end
        yield m.start(), end, "private-key"


def find_secrets(text: str) -> list[Span]:
    """Every secret's (start, end, kind) in `text`, overlapping spans merged, in order."""
    found: list[Span] = [*_private_key_spans(text), *_keyword_spans(text)]
    for ws, we in _windows(text):
        found += _pattern_spans(text, ws, we)
        found += _assignment_spans(text, ws, we)
        found += _entropy_spans(text, ws, we)
    found.sort()
    marked = [m.span() for m in _REDACTED.finditer(text)]
    marked_starts = [s for s, _ in marked]
    merged: list[Span] = []
    for start, end, kind in found:
        # Markers do not overlap: only the last one starting at or before a span can hold it.
        at = bisect.bisect_right(marked_starts, start) - 1
        if at >= 0 and end <= marked[at][1]:
            continue  # already redacted: redacting twice changes nothing
        if merged and start <= merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], end), last[2])
        else:
            merged.append((start, end, kind))
    return merged


def redact_counted(text: str) -> tuple[str, list[str]]:
    """`text` with each secret replaced by `[redacted:KIND]`, and the kinds replaced."""
    if not text:
        return text, []
    out = []
    kinds = []
    at = 0
    for start, end, kind in find_secrets(text):
        out.append(text[at:start])
        out.append(f"[redacted:{kind}]")
        kinds.append(kind)
        at = end
    out.append(text[at:])
    return "".join(out), kinds


def redact(text: str) -> str:
    """`text` with each secret replaced by `[redacted:KIND]`."""
    return redact_counted(text)[0]
