"""Corpora for the redactor, made fresh from a seeded random source at run time (so no
real-looking key is committed):

- `secret_corpus()`: the first round's fakes, one or more per provider format.
- `real_secrets(held_out=)`: fake secrets in the real formats of the common providers and
  in the forms people type them (CLI password flags, basic auth, database URLs, `.env`
  lines), each in the kind of line a transcript carries it in. Every form has several line
  shapes; the tuned part uses all but its last shape, the held-out part only its last, with
  its own seed, so the held-out figure measures shapes the rules were not tuned on.
- `benign_strings(held_out=)`: strings that look like secrets and are not (npm integrity
  hashes, git SHAs, UUIDs, base64 images, paths, URLs without credentials, versions,
  timestamps, lock file hashes, code identifiers), split the same way.

Written before the redactor was tuned on it (issue 43 finding 8); `benchmark/redaction.py`
publishes the figures of both parts, before and after.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from collections.abc import Callable
from typing import NamedTuple

__all__ = ["Benign", "Secret", "benign_strings", "hostile_lines", "real_secrets", "secret_corpus"]

_ALNUM = string.ascii_letters + string.digits
_URLSAFE = _ALNUM + "-_"
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"


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


class Secret(NamedTuple):
    form: str  # the format's name, e.g. "aws-secret-key"
    line: str  # the line (or lines) as typed or printed
    secret: str  # what must not survive


class Benign(NamedTuple):
    form: str
    text: str  # must pass through unchanged


# --- secret formats: each (rng) -> the secret --------------------------------------------

Gen = Callable[[random.Random], str]


def _password(rng: random.Random) -> str:
    """A typed password: letters, digits and a few punctuation marks, as people pick them."""
    core = _pick(rng, _ALNUM, rng.randint(8, 14))
    return core[:4] + rng.choice("!#%*+-_.") + core[4:] + str(rng.randint(0, 9))


def _aws_secret(rng: random.Random) -> str:
    """40 characters of base64; about one key in eight has two or more `/` (issue 43)."""
    key = list(_pick(rng, _ALNUM, 40))
    for at in rng.sample(range(1, 39), rng.choice((1, 2, 2, 3, 4))):
        key[at] = rng.choice("/+/")
    return "".join(key)


def _b64_of(rng: random.Random, n: int) -> str:
    return base64.b64encode(rng.randbytes(n)).decode()


def _slack_app(rng: random.Random) -> str:
    return f"xapp-1-A{_pick(rng, _UPPER_DIGITS, 10)}-{rng.randint(10**12, 10**13)}-" + _pick(
        rng, _HEX, 64
    )


def _slack_bot(rng: random.Random) -> str:
    return (
        f"xox{rng.choice('bp')}-{rng.randint(10**11, 10**12)}-{rng.randint(10**12, 10**13)}-"
        + _pick(rng, _ALNUM, 24)
    )


def _basic(rng: random.Random) -> str:
    user = rng.choice(("admin", "deploy", "ci", "alice", "svc-build"))
    return base64.b64encode(f"{user}:{_password(rng)}".encode()).decode()


_PROVIDERS: dict[str, Gen] = {
    "openai-project": lambda r: "sk-proj-" + _pick(r, _URLSAFE, 156),
    "openai-legacy": lambda r: "sk-" + _pick(r, _ALNUM, 20) + "T3BlbkFJ" + _pick(r, _ALNUM, 20),
    "openai-svcacct": lambda r: "sk-svcacct-" + _pick(r, _URLSAFE, 74),
    "openai-admin": lambda r: "sk-admin-" + _pick(r, _URLSAFE, 64),
    "anthropic": lambda r: "sk-ant-api03-" + _pick(r, _URLSAFE, 93) + "AA",
    "anthropic-admin": lambda r: "sk-ant-admin01-" + _pick(r, _URLSAFE, 93) + "AA",
    "github-classic": lambda r: "ghp_" + _pick(r, _ALNUM, 36),
    "github-oauth": lambda r: r.choice(("gho_", "ghu_", "ghs_", "ghr_")) + _pick(r, _ALNUM, 36),
    "github-fine-grained": lambda r: (
        "github_pat_" + _pick(r, _ALNUM, 22) + "_" + _pick(r, _ALNUM, 59)
    ),
    "gitlab-pat": lambda r: "glpat-" + _pick(r, _URLSAFE, 20),
    "gitlab-other": lambda r: (
        r.choice(("gldt-", "glrt-", "glptt-", "glcbt-")) + _pick(r, _URLSAFE, 20)
    ),
    "slack-bot": _slack_bot,
    "slack-app": _slack_app,
    "slack-webhook": lambda r: (
        "https://hooks.slack.com/services/T"
        + _pick(r, _UPPER_DIGITS, 8)
        + "/B"
        + _pick(r, _UPPER_DIGITS, 10)
        + "/"
        + _pick(r, _ALNUM, 24)
    ),
    "stripe-secret": lambda r: (
        r.choice(("sk_live_", "rk_live_", "sk_test_")) + _pick(r, _ALNUM, 99)
    ),
    "stripe-webhook": lambda r: "whsec_" + _pick(r, _ALNUM, 32),
    "aws-access-key": lambda r: r.choice(("AKIA", "ASIA")) + _pick(r, _UPPER_DIGITS, 16),
    "aws-secret-key": _aws_secret,
    "gcp-api-key": lambda r: "AIza" + _pick(r, _URLSAFE, 35),
    "gcp-oauth-token": lambda r: "ya29." + _pick(r, _URLSAFE, 120),
    "azure-client-secret": lambda r: (
        _pick(r, _ALNUM, 3) + str(r.randint(0, 9)) + "Q~" + _pick(r, _ALNUM + "_~.-", 34)
    ),
    "azure-storage-key": lambda r: _b64_of(r, 64),
    "npm-token": lambda r: "npm_" + _pick(r, _ALNUM, 36),
    "pypi-token": lambda r: "pypi-AgEIcHlwaS5vcmc" + _pick(r, _URLSAFE, 140),
    "jwt": _jwt,
    "huggingface": lambda r: "hf_" + _pick(r, _ALNUM, 34),
    "digitalocean": lambda r: r.choice(("dop_v1_", "doo_v1_", "dor_v1_")) + _pick(r, _HEX, 64),
    "mailgun": lambda r: "key-" + _pick(r, _HEX, 32),
    "databricks": lambda r: "dapi" + _pick(r, _HEX, 32) + r.choice(("", "-2", "-3")),
    "airtable": lambda r: "pat" + _pick(r, _ALNUM, 14) + "." + _pick(r, _HEX, 64),
    "sendgrid": lambda r: "SG." + _pick(r, _URLSAFE, 22) + "." + _pick(r, _URLSAFE, 43),
    "twilio-api-key": lambda r: "SK" + _pick(r, _HEX, 32),
    "shopify": lambda r: r.choice(("shpat_", "shpss_", "shpca_")) + _pick(r, _HEX, 32),
    "discord-bot": lambda r: (
        "M" + _pick(r, _URLSAFE, 23) + "." + _pick(r, _URLSAFE, 6) + "." + _pick(r, _URLSAFE, 38)
    ),
    "telegram-bot": lambda r: f"{r.randint(10**8, 10**10)}:AA" + _pick(r, _URLSAFE, 33),
    "atlassian": lambda r: "ATATT3xFfGF0" + _pick(r, _URLSAFE, 170) + "=" + _pick(r, _HEX, 8),
    "linear": lambda r: "lin_api_" + _pick(r, _ALNUM, 40),
    "notion": lambda r: "ntn_" + _pick(r, _ALNUM, 46),
    "sentry-token": lambda r: "sntrys_" + _pick(r, _URLSAFE, 80),
    "grafana": lambda r: "glsa_" + _pick(r, _ALNUM, 32) + "_" + _pick(r, _HEX, 8),
    "postman": lambda r: "PMAK-" + _pick(r, _HEX, 24) + "-" + _pick(r, _HEX, 34),
    "newrelic": lambda r: "NRAK-" + _pick(r, _UPPER_DIGITS, 27),
    "docker-hub": lambda r: "dckr_pat_" + _pick(r, _URLSAFE, 27),
    "terraform-cloud": lambda r: _pick(r, _ALNUM, 14) + ".atlasv1." + _pick(r, _ALNUM, 67),
    "doppler": lambda r: "dp.st." + _pick(r, _ALNUM, 43),
    "pulumi": lambda r: "pul-" + _pick(r, _HEX, 40),
    "groq": lambda r: "gsk_" + _pick(r, _ALNUM, 52),
    "replicate": lambda r: "r8_" + _pick(r, _ALNUM, 37),
    "xai": lambda r: "xai-" + _pick(r, _ALNUM, 80),
    "age-key": lambda r: "AGE-SECRET-KEY-1" + _pick(r, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
    "mapbox": lambda r: "sk.eyJ1Ijoi" + _pick(r, _URLSAFE, 60) + "." + _pick(r, _URLSAFE, 22),
    "square": lambda r: "EAAA" + _pick(r, _URLSAFE, 60),
    "heroku": lambda r: "HRKU-" + str(uuid.UUID(int=r.getrandbits(128))),
}

# Line shapes a provider key is carried in: the last is held out.
_KEY_LINES = (
    "export {ENV}={s}",
    "{ENV}={s}",
    "curl -H 'Authorization: Bearer {s}' https://api.example.com/v1/items",
    'config = {{"api_key": "{s}", "timeout": 30}}',
    "the key I used was {s}, please rotate it",
)
_ENV = {
    "aws-access-key": "AWS_ACCESS_KEY_ID",
    "aws-secret-key": "AWS_SECRET_ACCESS_KEY",
    "azure-storage-key": "AZURE_STORAGE_KEY",
    "gcp-api-key": "GOOGLE_API_KEY",
}
# Secrets with no prefix of their own are only secrets by what they are next to; their
# lines always say so.
_CONTEXT_LINES: dict[str, tuple[str, ...]] = {
    "aws-secret-key": (
        "export AWS_SECRET_ACCESS_KEY={s}",
        "aws_secret_access_key = {s}",
        'AWS_SECRET_ACCESS_KEY="{s}"',
        "aws configure set aws_secret_access_key {s}",
        "[default]\naws_access_key_id = AKIA{ak}\naws_secret_access_key={s}",
    ),
    "azure-storage-key": (
        "AZURE_STORAGE_KEY={s}",
        "DefaultEndpointsProtocol=https;AccountName=acct1;AccountKey={s};EndpointSuffix=core.windows.net",
        "az storage blob list --account-name acct1 --account-key {s}",
        'storage_key = "{s}"',
        "AccountName=prodlogs;AccountKey={s}",
    ),
}


def _provider_lines(rng: random.Random, held_out: bool) -> list[Secret]:
    out = []
    for form, gen in _PROVIDERS.items():
        shapes = _CONTEXT_LINES.get(form, _KEY_LINES)
        chosen = shapes[-1:] if held_out else shapes[:-1]
        env = _ENV.get(form, form.upper().replace("-", "_") + "_TOKEN")
        for shape in chosen:
            secret = gen(rng)
            ak = _pick(rng, _UPPER_DIGITS, 16)
            line = shape.format(s=secret, ENV=env, ak=ak)
            # A webhook's secret is its path; the host before it is public.
            out.append(Secret(form, line, secret.split("/services/")[-1]))
    return out


# --- typed forms: passwords in commands, URLs, headers, .env lines -----------------------

_TYPED: dict[str, tuple[Gen, tuple[str, ...]]] = {
    "mysql-p": (
        _password,
        (
            "mysql -u root -p{s} app",
            "mysqldump -h db -uadmin -p{s} shop > shop.sql",
            "mysql -p'{s}' -e 'show databases'",
            "mysqladmin -u root -p{s} status",
        ),
    ),
    "curl-u": (
        _password,
        (
            "curl -u admin:{s} https://ci.example.com/api/json",
            "curl --user deploy:{s} -X POST https://registry.example.com/v2/",
            'curl -s -u "ci:{s}" https://nexus.internal/repository/',
            "wget --user=admin --password={s} https://files.example.com/a.tgz",
        ),
    ),
    "sshpass": (
        _password,
        (
            "sshpass -p {s} ssh root@10.0.0.5",
            "sshpass -p '{s}' scp build.tgz deploy@web1:/srv/",
            'sshpass -p"{s}" rsync -a dist/ web2:/var/www',
            "SSHPASS={s} sshpass -e ssh ops@bastion",
        ),
    ),
    "basic-auth-header": (
        _basic,
        (
            "Authorization: Basic {s}",
            "curl -H 'Authorization: Basic {s}' https://jira.example.com/rest/api/2/issue",
            'headers = {{"Authorization": "Basic {s}"}}',
            "> authorization: basic {s}",
        ),
    ),
    "docker-login": (
        _password,
        (
            "echo {s} | docker login -u deploy --password-stdin",
            "echo '{s}' | docker login registry.example.com -u ci --password-stdin",
            "docker login -u admin -p {s} registry.gitlab.com",
            'printf "{s}" | helm registry login ghcr.io --username me --password-stdin',
        ),
    ),
    "cli-password-flag": (
        _password,
        (
            "psql --password={s} -h db app",
            "redis-cli -h cache -a {s} ping",
            "openssl pkcs12 -in cert.p12 -passin pass:{s} -nokeys",
            "htpasswd -b -c .htpasswd admin {s}",
        ),
    ),
    "db-url": (
        _password,
        (
            "DATABASE_URL=postgres://app:{s}@db.internal:5432/app",
            "mongodb+srv://admin:{s}@cluster0.abcde.mongodb.net/test?retryWrites=true",
            "engine = create_engine('mysql+pymysql://root:{s}@localhost/shop')",
            "amqp://guest:{s}@rabbit:5672/%2F",
        ),
    ),
    "db-url-slash": (
        lambda r: _pick(r, _ALNUM, 6) + "/" + _pick(r, _ALNUM, 5) + r.choice(("", "/x9")),
        (
            "DATABASE_URL=postgresql://app:{s}@db.internal:5432/app",
            "psql postgres://admin:{s}@10.0.0.7/prod",
            "REDIS_URL=redis://default:{s}@redis-123.cloud.example.com:6379",
            "connecting to mysql://svc:{s}@db-primary:3306/orders failed",
        ),
    ),
    "url-password": (
        _password,
        (
            "git clone https://alice:{s}@git.example.com/team/repo.git",
            "pip install --index-url https://build:{s}@pypi.internal/simple pkg",
            "proxy = http://user:{s}@proxy.corp:3128",
            "https://admin:{s}@grafana.internal/d/abc",
        ),
    ),
    "env-parentheses": (
        lambda r: _pick(r, _ALNUM, 5) + "(" + _pick(r, _ALNUM, 4) + ")" + _pick(r, _ALNUM, 3),
        (
            "DB_PASSWORD={s}",
            "export ADMIN_PASSWORD='{s}'",
            'SMTP_PASS="{s}"',
            "  API_SECRET={s}",
        ),
    ),
    "env-line": (
        _password,
        (
            "POSTGRES_PASSWORD={s}",
            "export MYSQL_ROOT_PASSWORD={s}",
            "JWT_SECRET='{s}'",
            "REDIS_AUTH_TOKEN={s}",
        ),
    ),
    "config-password": (
        _password,
        (
            'password = "{s}"',
            '  "password": "{s}",',
            "    password: {s}",
            "spring.datasource.password={s}",
        ),
    ),
    "netrc": (
        _password,
        (
            "machine api.heroku.com login me@example.com password {s}",
            "machine github.com\n  login bot\n  password {s}",
            "default login anonymous password {s}",
            "machine nexus.internal login ci password {s}",
        ),
    ),
    "datadog-bare": (
        lambda r: _pick(r, _HEX, 32),
        (
            "DD_API_KEY={s}",
            "curl -X POST https://api.datadoghq.com/api/v1/series -H 'DD-API-KEY: {s}'",
            "datadog api key: {s}",
            "here is our datadog key {s} for the agent",
        ),
    ),
    "datadog-app-key": (
        lambda r: _pick(r, _HEX, 40),
        (
            "DD_APP_KEY={s}",
            "-H 'DD-APPLICATION-KEY: {s}'",
            "datadog_app_key = '{s}'",
            "the Datadog application key is {s}",
        ),
    ),
    "x-api-key-header": (
        lambda r: _pick(r, _ALNUM, 32),
        (
            "curl -H 'X-API-Key: {s}' https://api.example.com",
            "x-api-key: {s}",
            'headers = {{"X-Api-Key": "{s}"}}',
            '-H "x-auth-token: {s}"',
        ),
    ),
    "bearer-opaque": (
        lambda r: _pick(r, _URLSAFE, 40),
        (
            "Authorization: Bearer {s}",
            "curl -H 'authorization: bearer {s}' localhost:8080",
            'fetch(url, {{headers: {{Authorization: "Bearer {s}"}}}})',
            "-H 'Authorization: token {s}'",
        ),
    ),
    "k8s-secret-data": (
        lambda r: base64.b64encode(_password(r).encode()).decode(),
        (
            "  password: {s}",
            "  db-password: {s}",
            "data:\n  api-token: {s}",
            "  client_secret: {s}",
        ),
    ),
    "pgpassword": (
        _password,
        (
            "PGPASSWORD={s} psql -h db -U app",
            "env PGPASSWORD='{s}' pg_dump app > app.sql",
            "MYSQL_PWD={s} mysql -u root",
            "PGPASSWORD=\"{s}\" psql -c 'select 1'",
        ),
    ),
    "private-key": (
        lambda r: r.choice(("RSA ", "OPENSSH ", "EC ", "", "ENCRYPTED ", "DSA ")),
        (
            "cat ~/.ssh/id_rsa\n{block}",
            "here is the key:\n{block}\nthanks",
            '"private_key": "{escaped}",',
            "{block}",
        ),
    ),
}


def _typed_lines(rng: random.Random, held_out: bool) -> list[Secret]:
    out = []
    for form, (gen, shapes) in _TYPED.items():
        for shape in shapes[-1:] if held_out else shapes[:-1]:
            if form == "private-key":
                block, line = _private_key(rng, gen(rng))
                text = shape.format(block=block, escaped=block.replace("\n", "\\n"))
                out.append(Secret(form, text, line))
                continue
            secret = gen(rng)
            out.append(Secret(form, shape.format(s=secret), secret))
    return out


def real_secrets(held_out: bool = False) -> list[Secret]:
    """The secret corpus: the tuned part, or (held_out) the shapes and seed kept apart."""
    rng = random.Random(4303 if held_out else 4301)
    out = _provider_lines(rng, held_out) + _typed_lines(rng, held_out)
    if not held_out:
        # The first round's fakes stay in the tuned part.
        out += [Secret("first-round", line, s) for line, s in secret_corpus()]
    return out


# --- benign look-alikes ------------------------------------------------------------------


def _sri(rng: random.Random, algo: str, n: int) -> str:
    return f"{algo}-" + base64.b64encode(rng.randbytes(n)).decode()


def _sha(rng: random.Random) -> str:
    return hashlib.sha1(rng.randbytes(16)).hexdigest()


_WORDS = [
    "build",
    "src",
    "components",
    "utils",
    "node_modules",
    "packages",
    "core",
    "api",
    "internal",
    "services",
    "models",
    "views",
    "handlers",
    "config",
    "tests",
    "fixtures",
    "assets",
    "images",
    "lib",
    "vendor",
    "scripts",
    "docs",
    "cmd",
    "pkg",
    "server",
    "client",
    "shared",
    "common",
    "helpers",
    "middleware",
    "routes",
    "schemas",
    "migrations",
]
_NAMES = [
    "UserProfileCard",
    "AuthTokenProvider",
    "PasswordResetForm",
    "SessionKeyManager",
    "ApiKeyRotation",
    "getAccessTokenSilently",
    "refreshTokenIfExpired",
    "validatePasswordStrength",
    "hashPasswordSha256",
    "createSecretVersion",
    "TokenizerFastConfig",
]


def _path(rng: random.Random) -> str:
    parts = [rng.choice(_WORDS) for _ in range(rng.randint(4, 8))]
    return "/".join(parts) + "/" + rng.choice(_NAMES) + rng.choice((".tsx", ".py", ".go", ".ts"))


def _png(rng: random.Random) -> str:
    return (
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA"
        + base64.b64encode(rng.randbytes(rng.randint(120, 600))).decode()
    )


def _stamp(rng: random.Random) -> str:
    return (
        f"2026{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}T"
        f"{rng.randint(0, 23):02d}{rng.randint(0, 59):02d}{rng.randint(0, 59):02d}Z"
    )


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


_BENIGN: dict[str, tuple[Gen, tuple[str, ...]]] = {
    "npm-integrity": (
        lambda r: _sri(r, "sha512", 64),
        (
            '      "integrity": "{s}",',
            "  integrity {s}",
            "integrity: {s}",
            '    "integrity": "{s}"',
        ),
    ),
    "sri-sha384": (
        lambda r: _sri(r, r.choice(("sha384", "sha256", "sha1")), r.choice((48, 32, 20))),
        (
            '<script src="https://cdn.example.com/lib.js" integrity="{s}" crossorigin="anonymous">',
            '"integrity": "{s}"',
            '<link rel="stylesheet" href="/a.css" integrity="{s}">',
            "  integrity: {s}",
        ),
    ),
    "yarn-lock": (
        lambda r: _sha(r),
        (
            '  resolved "https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz#{s}"',
            '  resolution: "lodash@npm:4.17.21"\n  checksum: {s}',
            '  resolved "https://registry.npmjs.org/react/-/react-18.2.0.tgz#{s}"',
            "  checksum: {s}",
        ),
    ),
    "lock-sha256": (
        lambda r: hashlib.sha256(r.randbytes(16)).hexdigest(),
        (
            '    {{file = "requests-2.31.0-py3-none-any.whl", hash = "sha256:{s}"}},',
            'checksum = "{s}"',
            "    --hash=sha256:{s} \\",
            "sha256sum: {s}  dist/app.tar.gz",
        ),
    ),
    "go-sum": (
        lambda r: base64.b64encode(r.randbytes(32)).decode(),
        (
            "github.com/stretchr/testify v1.8.4 h1:{s}",
            "golang.org/x/sys v0.15.0/go.mod h1:{s}",
            "google.golang.org/grpc v1.60.1 h1:{s}",
            "github.com/spf13/cobra v1.8.0 h1:{s}",
        ),
    ),
    "docker-digest": (
        lambda r: hashlib.sha256(r.randbytes(8)).hexdigest(),
        (
            "FROM python:3.11-slim@sha256:{s}",
            "image: nginx@sha256:{s}",
            "Digest: sha256:{s}",
            "docker pull redis@sha256:{s}",
        ),
    ),
    "git-sha": (
        _sha,
        (
            "commit {s}",
            "Merge: {s} into main",
            "git cherry-pick {s}",
            "HEAD is now at {s} fix the build",
        ),
    ),
    "uuid": (
        _uuid,
        (
            "request_id={s}",
            '"id": "{s}",',
            "trace {s} finished in 12 ms",
            "session_id: {s}",
        ),
    ),
    "base64-image": (
        _png,
        (
            '<img src="{s}" alt="logo">',
            "![chart]({s})",
            "background: url({s});",
            '"image_url": "{s}"',
        ),
    ),
    "file-path": (
        _path,
        (
            "edited {s}",
            '  File "/home/dev/{s}", line 42, in handler',
            "M  {s}",
            "see {s} for the details",
        ),
    ),
    "deep-path": (
        lambda r: "/".join(
            rng_word + str(r.randint(0, 99)) if r.random() < 0.3 else rng_word
            for rng_word in (r.choice(_WORDS).title() for _ in range(r.randint(5, 9)))
        ),
        (
            "/Users/dev/Projects/{s}/index.ts",
            "C:/{s}/Program.cs",
            "ls ./{s}",
            "node_modules/.pnpm/{s}/package.json",
        ),
    ),
    "url-no-credentials": (
        lambda r: (
            f"https://{r.choice(('github.com', 'docs.python.org', 'example.com'))}/"
            + "/".join(r.choice(_WORDS) for _ in range(3))
            + f"?page={r.randint(1, 9)}&sort=desc&ref={_pick(r, _HEX, 7)}"
        ),
        (
            "open {s}",
            "fetched {s} in 120 ms",
            "[docs]({s})",
            "GET {s} 200",
        ),
    ),
    "url-with-port": (
        lambda r: f"http://localhost:{r.randint(1024, 65000)}/api/v{r.randint(1, 3)}/items@latest",
        (
            "server listening on {s}",
            "curl {s}",
            "BASE_URL={s}",
            "proxying {s}",
        ),
    ),
    "version": (
        lambda r: f"{r.randint(0, 20)}.{r.randint(0, 40)}.{r.randint(0, 99)}",
        (
            '"version": "{s}",',
            "tokenizers=={s}",
            "Successfully installed keyring-{s} secretstorage-{s}",
            "passlib {s}",
        ),
    ),
    "timestamp": (
        _stamp,
        (
            "benchmark/published/code-search-{s}/README.md",
            "backup-{s}.tar.zst",
            "run {s} done",
            "[retrieval-{s}](retrieval-{s}/README.md)",
        ),
    ),
    "code-identifier": (
        lambda r: r.choice(_NAMES),
        (
            "const token = await {s}(client);",
            "password = form.cleaned_data['password']",
            "def {s}(self, token: str) -> bool:",
            "secret_name = f'projects/{{project}}/secrets/{s}'",
        ),
    ),
    "code-assignment": (
        lambda r: r.choice(("get_token()", "os.environ['API_KEY']", "settings.SECRET_KEY", "None")),
        (
            "token = {s}",
            "api_key = {s}",
            "password={s}",
            "self.secret = {s}",
        ),
    ),
    "env-placeholder": (
        lambda r: r.choice(
            ("${API_KEY}", "<your-key-here>", "changeme", "xxxxxxxx", "$(cat /run/secrets/db)")
        ),
        (
            "API_KEY={s}",
            "export DB_PASSWORD={s}",
            "SECRET_KEY={s}",
            "GITHUB_TOKEN={s}",
        ),
    ),
    "prose": (
        lambda r: r.choice(("password", "token", "secret", "API key", "credentials")),
        (
            "Reset your {s} from the settings page, then sign in again.",
            "The {s} is read from the keychain at start-up; nothing is written to disk.",
            "If the {s} expires, the client asks for a new one.",
            "We rotate the {s} every 90 days (see the runbook).",
        ),
    ),
    "cli-no-secret": (
        lambda r: r.choice(("root", "admin", "deploy")),
        (
            "mysql -u {s} -p app",
            "cat ~/.docker/pw.txt | docker login -u {s} --password-stdin",
            "curl -u {s} https://ci.example.com/api/json",
            "ssh -p 2222 {s}@bastion",
        ),
    ),
    "hex-color-css": (
        lambda r: "#" + _pick(r, _HEX, 6),
        (
            "color: {s};",
            "  --primary: {s};",
            'fill="{s}"',
            "border: 1px solid {s};",
        ),
    ),
    "k8s-pod": (
        lambda r: f"web-{_pick(r, _HEX, 10)}-{_pick(r, 'bcdfghjklmnpqrstvwxz2456789', 5)}",
        (
            "kubectl logs {s}",
            "pod/{s} created",
            "{s}   1/1     Running   0          3h",
            "kubectl delete pod {s}",
        ),
    ),
    "md5-etag": (
        lambda r: hashlib.md5(r.randbytes(8)).hexdigest(),
        (
            'ETag: "{s}"',
            "md5sum {s}  file.bin",
            "cache key {s}",
            '"etag": "{s}"',
        ),
    ),
    "camel-words": (
        lambda r: "".join(w.title() for w in r.sample(_WORDS, 6)) + str(r.randint(10, 99)),
        (
            "class {s}Test:",
            "export const {s} = () => null;",
            "{s}.prototype.render = function() {{}}",
            "type {s} = Record<string, unknown>",
        ),
    ),
    "ipv6-mac": (
        lambda r: ":".join(_pick(r, _HEX, 4) for _ in range(8)),
        (
            "inet6 {s}/64 scope global",
            "addr={s}",
            "listening on [{s}]:443",
            "route add {s}",
        ),
    ),
    "email": (
        lambda r: f"{r.choice(_WORDS)}.{r.choice(_WORDS)}@example.com",
        (
            "Author: Dev <{s}>",
            "git config user.email {s}",
            "mailto:{s}",
            "Signed-off-by: {s}",
        ),
    ),
}


def benign_strings(held_out: bool = False) -> list[Benign]:
    """Strings that must pass unchanged: the tuned part, or (held_out) the shapes kept apart."""
    rng = random.Random(4313 if held_out else 4311)
    out = []
    for form, (gen, shapes) in _BENIGN.items():
        for shape in shapes[-1:] if held_out else shapes[:-1]:
            for _ in range(3):
                out.append(Benign(form, shape.format(s=gen(rng))))
    return out


def hostile_lines(n: int = 4000) -> dict[str, str]:
    """Lines built to make a backtracking redactor quadratic, each `n` characters."""
    rng = random.Random(43)
    words = ("password", "token", "secret", "api_key", "auth", "passwd", "credentials")

    def fill(make: Callable[[], str]) -> str:
        out = ""
        while len(out) < n:
            out += make()
        return out[:n]

    alnum = string.ascii_letters + string.digits
    return {
        "password repeated": fill(lambda: "password"),
        "aws_secret_ repeated": fill(lambda: "aws_secret_"),
        "secret words": fill(lambda: rng.choice(words) + " "),
        "secret words glued": fill(lambda: rng.choice(words) + rng.choice("_-.")),
        "assignments": fill(lambda: rng.choice(words) + "=" + rng.choice(words) + " "),
        "colons": fill(lambda: rng.choice(words) + ": "),
        "one long token": fill(lambda: rng.choice(alnum)),
        "url userinfo": fill(lambda: "://" + rng.choice(words) + ":"),
        "bearer": fill(lambda: "Bearer " + rng.choice(words)),
        "key header": fill(lambda: "-----BEGIN " + "PRIVATE KEY-----"),
        "flags": fill(lambda: "--password -p" + rng.choice(words) + " "),
        "mysql -p": fill(lambda: "mysql " + "-p" + rng.choice(words) + " | "),
        "npm authToken": fill(lambda: "//" + rng.choice(words)),
        "datadog": fill(lambda: "datadog dd-" + rng.choice(words)),
        "redacted markers": fill(lambda: "[redacted:x] " + rng.choice(words) + "=Ab12cd34 "),
    }
