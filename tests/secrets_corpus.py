"""A corpus of fake secrets in the real formats of the common providers, made fresh from a
seeded random source (so no real-looking key is committed), each in the kind of line a
transcript carries it in."""

from __future__ import annotations

import base64
import json
import random
import string

__all__ = ["secret_corpus"]

_ALNUM = string.ascii_letters + string.digits
_URLSAFE = _ALNUM + "-_"


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _jwt(rng: random.Random) -> str:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    sig = _pick(rng, _URLSAFE, 43)
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': rng.randint(1, 10**9)})}.{sig}"


def _private_key(rng: random.Random, kind: str) -> tuple[str, str]:
    body = "\n".join(_pick(rng, _ALNUM + "+/", 64) for _ in range(6))
    block = f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----"
    return block, body.splitlines()[2]


def secret_corpus(seed: int = 29) -> list[tuple[str, str]]:
    """(line as typed or printed, the secret it holds) pairs, one or more per format."""
    rng = random.Random(seed)
    hexd = "0123456789abcdef"
    out: list[tuple[str, str]] = []

    def add(template: str, secret: str) -> None:
        out.append((template.format(s=secret), secret))

    add("export OPENAI_API_KEY={s}", "sk-proj-" + _pick(rng, _URLSAFE, 120))
    add("OPENAI_API_KEY={s}", "sk-" + _pick(rng, _ALNUM, 20) + "T3BlbkFJ" + _pick(rng, _ALNUM, 20))
    add("client = OpenAI(api_key='{s}')", "sk-svcacct-" + _pick(rng, _URLSAFE, 60))
    add("ANTHROPIC_API_KEY={s}", "sk-ant-api03-" + _pick(rng, _URLSAFE, 93) + "AA")
    add("anthropic key is {s} right?", "sk-ant-admin01-" + _pick(rng, _URLSAFE, 80))
    add("git remote set-url origin https://{s}@github.com/o/r", "ghp_" + _pick(rng, _ALNUM, 36))
    add("GH_TOKEN={s}", "gho_" + _pick(rng, _ALNUM, 36))
    add("token: {s}", "github_pat_" + _pick(rng, _ALNUM + "_", 82))
    add("using ghs token {s} in CI", "ghs_" + _pick(rng, _ALNUM, 36))
    add("GITLAB_TOKEN={s}", "glpat-" + _pick(rng, _URLSAFE, 20))
    add(
        "curl -H 'PRIVATE-TOKEN: {s}' https://gitlab.example.com", "glpat-" + _pick(rng, _ALNUM, 20)
    )
    add(
        "SLACK_BOT_TOKEN={s}",
        f"xoxb-{rng.randint(10**11, 10**12)}-{rng.randint(10**12, 10**13)}-"
        + _pick(rng, _ALNUM, 24),
    )
    add(
        "post to {s}",
        "https://hooks.slack.com/services/T"
        + _pick(rng, string.ascii_uppercase, 8)
        + "/B"
        + _pick(rng, string.ascii_uppercase, 8)
        + "/"
        + _pick(rng, _ALNUM, 24),
    )
    add('stripe.api_key = "{s}"', "sk_live_" + _pick(rng, _ALNUM, 24))
    add("STRIPE_KEY={s}", "rk_test_" + _pick(rng, _ALNUM, 32))
    add("aws_access_key_id = {s}", "AKIA" + _pick(rng, string.ascii_uppercase + string.digits, 16))
    add("aws_secret_access_key = {s}", _pick(rng, _ALNUM + "/+", 40))
    add('AWS_SECRET_ACCESS_KEY="{s}"', _pick(rng, _ALNUM + "/+", 40))
    add('const key = "{s}";', "AIza" + _pick(rng, _URLSAFE, 35))
    add("Authorization: Bearer {s}", "ya29." + _pick(rng, _URLSAFE, 90))
    add("//registry.npmjs.org/:_authToken={s}", "npm_" + _pick(rng, _ALNUM, 36))
    add("password = {s}", "pypi-AgEIcHlwaS5vcmc" + _pick(rng, _URLSAFE, 80))
    add("HF_TOKEN={s}", "hf_" + _pick(rng, _ALNUM, 34))
    add("DATABASE_URL=postgres://admin:{s}@db.internal:5432/app", _pick(rng, _ALNUM, 16))
    add("redis://:{s}@cache:6379/0", _pick(rng, _ALNUM, 20))
    add("db_password: {s}", _pick(rng, _ALNUM, 8) + "!9")
    add('password = "{s}"', "hunter2-" + _pick(rng, _ALNUM, 6))
    add("export DB_PASS='{s}'", _pick(rng, _ALNUM + "#%", 14))
    add("SECRET_KEY={s}", _pick(rng, _ALNUM, 50))
    add("mysql -u root --password={s} app", "Pa55-" + _pick(rng, _ALNUM, 10))
    add("Authorization: Bearer {s}", _jwt(rng))
    add("the session cookie was {s}", _jwt(rng))
    add("twilio AC sid {s}", "AC" + _pick(rng, "abcdef0123456789", 32))
    add("SENDGRID_API_KEY={s}", "SG." + _pick(rng, _URLSAFE, 22) + "." + _pick(rng, _URLSAFE, 43))
    add(
        "discord {s}",
        "M"
        + _pick(rng, _URLSAFE, 23)
        + "."
        + _pick(rng, _URLSAFE, 6)
        + "."
        + _pick(rng, _URLSAFE, 27),
    )
    add("bot token {s}", f"{rng.randint(10**8, 10**9)}:" + _pick(rng, _URLSAFE, 35))
    add("api_secret={s}", _pick(rng, hexd, 40))
    add("random key {s} pasted", _pick(rng, _ALNUM, 40))
    add("?api_key={s}&q=1", _pick(rng, _ALNUM, 32))
    add("AccountKey={s}", _pick(rng, _ALNUM + "+/", 86) + "==")
    for kind in ("RSA ", "OPENSSH ", "EC ", ""):
        block, line = _private_key(rng, kind)
        out.append((f"here is the key:\n{block}\nthanks", line))
    return out
