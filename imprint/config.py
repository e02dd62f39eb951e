"""Configuration: one typed schema, `{data_dir}/config.toml` over defaults, environment on top.

Keys are dotted (`recall.llm_timeout_sec`); the environment name of a key is
`IMPRINT_` + its path upper-cased with dots turned into underscores
(`IMPRINT_RECALL_LLM_TIMEOUT_SEC`, `IMPRINT_TAGGER_LOCAL_N_THREADS`).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.fields import FieldInfo

from imprint._config_groups import BackupConfig, HooksConfig, RedactConfig, TeamConfig, _Group
from imprint._fs import atomic_write_text, data_dir, private_dir
from imprint.errors import ConfigError

__all__ = [
    "LIVE_KEYS",
    "Config",
    "all_keys",
    "config_path",
    "data_dir",
    "describe_allowed",
    "env_name",
    "flatten",
    "get_value",
    "is_secret",
    "key_origin",
    "load_config",
    "needs_restart",
    "secret_state",
    "set_value",
    "shown_value",
]

ENV_PREFIX = "IMPRINT_"


_NEAR_DUPLICATE = (
    "a memory at least this similar (cosine) to one of its project is not stored again: "
    "`already stored as ID (similar, 0.95)`; 0 = off (exact text only)"
)


class StoreConfig(_Group):
    chroma_url: str = Field(
        default="",
        description="Chroma server URL (http://127.0.0.1:8000); empty = embedded store",
    )
    min_free_mb: int = Field(
        default=64,
        ge=0,
        le=1_048_576,
        description="writes are refused while the store's disk has less free (MB; plus a "
        "quarter of the vector index's size); 0 = no check",
    )
    near_duplicate: float = Field(default=0.0, ge=0.0, le=1.0, description=_NEAR_DUPLICATE)

    @field_validator("chroma_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value:
            return value
        parts = urlsplit(value)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise ValueError("an http(s):// URL with a host, or empty for the embedded store")
        return value.rstrip("/")


class EmbeddingConfig(_Group):
    threads: int = Field(default=2, ge=1, le=64, description="onnxruntime intra-op threads")
    batch_size: int = Field(default=32, ge=1, le=256, description="chunks per embedding batch")
    max_tokens: int = Field(default=256, ge=16, le=512, description="tokens kept per chunk")
    model_path: str = Field(default="", description="ONNX model file; empty = the bundled one")
    tokenizer_path: str = Field(default="", description="tokenizer.json; empty = the bundled one")
    query_cache_size: int = Field(
        default=512, ge=0, le=100_000, description="query embeddings kept for reuse; 0 = off"
    )


class ReadersConfig(_Group):
    pool_size: int = Field(default=4, ge=1, le=32, description="actors per reader pool")
    timeout_sec: float = Field(
        default=30.0,
        gt=0,
        le=600,
        description="deadline of one tool call's reads (a recall step uses the recall's)",
    )


class IngestConfig(_Group):
    max_file_bytes: int = Field(
        default=1_048_576, ge=1024, le=64 * 1_048_576, description="larger files are skipped"
    )
    chunk_chars: int = Field(default=1200, ge=300, le=4000, description="target chunk size")
    chunk_overlap: int = Field(default=150, ge=0, le=1000, description="characters repeated")
    allowed_roots: list[str] = Field(
        default_factory=list,
        description="folders ingest_path may read; empty = the server's working directory",
    )
    max_chunks_per_source: int = Field(
        default=5000,
        ge=1,
        le=100_000,
        description="a file, page or text that would make more chunks is refused",
    )
    allow_private_urls: bool = Field(
        default=False,
        description="let ingest_url fetch loopback, link-local and private-network addresses",
    )
    url_timeout_sec: float = Field(
        default=10.0, gt=0, le=600, description="total wall-clock limit of one ingest_url fetch"
    )
    url_concurrency: int = Field(
        default=2,
        ge=1,
        le=16,
        description="ingest_url fetches at once (their own threads, so reads never wait)",
    )


class SearchConfig(_Group):
    limit: int = Field(
        default=10, ge=1, le=50, description="results when a search (or step) gives no limit"
    )
    mode: Literal["hybrid", "semantic", "lexical"] = Field(
        default="hybrid", description="mode when a search (or step) gives none"
    )
    max_chars: int = Field(
        default=4000, ge=1200, le=12000, description="budget of search and recall when not given"
    )
    rrf_k: int = Field(default=5, ge=1, le=1000, description="reciprocal-rank fusion constant")
    vector_weight: float = Field(
        default=1.5, ge=0, le=10, description="hybrid: weight of the vector (meaning) ranking"
    )
    lexical_weight: float = Field(
        default=1.0, ge=0, le=10, description="hybrid: weight of the BM25 (any word) ranking"
    )
    phrase_weight: float = Field(
        default=1.0, ge=0, le=10, description="hybrid: weight of the exact-phrase ranking"
    )
    coverage_weight: float = Field(
        default=0.5,
        ge=0,
        le=10,
        description="hybrid: re-rank bonus for a chunk holding all the query's terms, "
        "in first ranks of one list; 0 = no re-rank",
    )
    rerank_depth: int = Field(
        default=20, ge=1, le=150, description="hybrid: fused candidates the re-rank reads"
    )
    history_weight: float = Field(
        default=1.0,
        ge=0,
        le=10,
        description="hybrid: re-rank penalty for a chunk of a history page (versions or dates "
        "in its headings) when the question is not about history, in first ranks of one list",
    )


class LocalModelConfig(_Group):
    model_path: str = Field(default="", description="GGUF file for the local provider")
    n_threads: int = Field(default=4, ge=1, le=256, description="llama.cpp threads")
    n_ctx: int = Field(default=4096, ge=256, le=131072, description="context window")
    chat_format: str = Field(default="", description="override when the GGUF has no template")


Provider = Literal["none", "local", "ollama", "vllm", "openai", "anthropic", "gemini"]


class TaggerConfig(_Group):
    llm: bool = Field(default=False, description="ask the model for tags on store and ingest")
    provider: Provider = Field(
        default="none", description="who runs the model of tagging and recall; none = no model"
    )
    model: str = Field(default="", description="the provider's model name (not for local)")
    base_url: str = Field(
        default="", description="the provider's server URL; empty = its usual one (vllm: none)"
    )
    # repr=False: a Config printed in a traceback or a log line never shows the key.
    api_key: str = Field(
        default="", repr=False, description="else the provider's usual environment variable"
    )
    timeout_sec: float = Field(
        default=20.0, gt=0, le=600, description="a tagging request's deadline (seconds)"
    )
    local: LocalModelConfig = Field(default_factory=LocalModelConfig)


class RecallConfig(_Group):
    llm: bool = Field(default=False, description="let a model on this computer plan and answer")
    llm_timeout_sec: float = Field(
        default=30.0, gt=0, le=600, description="one deadline for planning and answering (s)"
    )
    step_timeout_sec: float = Field(
        default=10.0, gt=0, le=300, description="deadline of a recall's read steps (seconds)"
    )
    pool_size: int = Field(
        default=16, ge=1, le=128, description="recalls gathered at once (coordinator actors)"
    )
    step_runners: int = Field(
        default=32, ge=1, le=256, description="step runner actors shared by all recalls"
    )


class ServerConfig(_Group):
    idle_exit_sec: float = Field(
        default=600.0, ge=1, le=86400, description="the shared daemon exits after this idle"
    )
    http_port: int = Field(default=8765, ge=1024, le=65535, description="serve --http port")
    http_read_timeout_sec: float = Field(
        default=5.0,
        ge=0.1,
        le=300,
        description="an HTTP request (serve --http, dashboard) must arrive whole within this",
    )
    http_max_connections: int = Field(
        default=64, ge=4, le=4096, description="open HTTP connections; more get 503"
    )


class LogConfig(_Group):
    level: Literal["debug", "info", "warning", "error"] = Field(
        default="warning", description="stderr level; the JSON file always gets info and up"
    )
    file: bool = Field(default=True, description="write {data_dir}/logs/imprint.jsonl")
    max_bytes: int = Field(
        default=20 * 1_048_576,
        ge=65_536,
        le=1_073_741_824,
        description="the JSON log rotates at this size",
    )
    keep: int = Field(default=3, ge=1, le=50, description="rotated JSON log files kept")


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    store: StoreConfig = Field(default_factory=StoreConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    readers: ReadersConfig = Field(default_factory=ReadersConfig)
    ingest: IngestConfig = Field(default_factory=IngestConfig)
    search: SearchConfig = Field(default_factory=SearchConfig)
    tagger: TaggerConfig = Field(default_factory=TaggerConfig)
    recall: RecallConfig = Field(default_factory=RecallConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)
    log: LogConfig = Field(default_factory=LogConfig)
    hooks: HooksConfig = Field(default_factory=HooksConfig)
    backup: BackupConfig = Field(default_factory=BackupConfig)
    team: TeamConfig = Field(default_factory=TeamConfig)
    redact: RedactConfig = Field(default_factory=RedactConfig)


# Shown as `set` / `not set` by every command and tool; `config get --reveal` shows the value.
SECRET_KEYS = frozenset({"tagger.api_key", "team.database"})  # a URL may hold a password
# Where a provider finds its key when tagger.api_key is empty (the providers read these).
PROVIDER_KEY_ENV: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}


# Keys the running process reads on every call: saved in the dashboard (inside that process),
# a change applies at once. Every other key is read when the data dir's owner starts, so a
# change needs a restart. The dashboard's "restart needed" column and `config set` say so.
LIVE_KEYS = ("recall.llm", "recall.llm_timeout_sec", "recall.step_timeout_sec")


def needs_restart(key: str) -> bool:
    """Whether a running owner (daemon or `serve --http`) uses a new value of `key` only
    once it is restarted."""
    _field(key)
    return key not in LIVE_KEYS


def is_secret(key: str) -> bool:
    return key in SECRET_KEYS


def secret_state(config: Config, key: str, environ: Mapping[str, str] | None = None) -> str:
    """`set`, `set (from ENV_NAME)` or `not set`: never the secret itself."""
    if get_value(config, key):
        return "set"
    env = os.environ if environ is None else environ
    if key == "tagger.api_key":
        for name in PROVIDER_KEY_ENV.get(config.tagger.provider, ()):
            if env.get(name):
                return f"set (from {name})"
    return "not set"


def shown_value(
    config: Config, key: str, *, reveal: bool = False, environ: Mapping[str, str] | None = None
) -> Any:
    """A key's value as commands print it: secrets as their state unless `reveal`."""
    if is_secret(key) and not reveal:
        return secret_state(config, key, environ)
    return get_value(config, key)


def config_path(root: Path) -> Path:
    return root / "config.toml"


def config_leaves(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, FieldInfo]]:
    """Every setting of `model` as its dotted key and its field, groups walked in order."""
    for name, field in model.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            yield from config_leaves(ann, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", field


def all_keys() -> list[str]:
    return [key for key, _ in config_leaves(Config)]


def _field(key: str) -> Any:
    for name, field in config_leaves(Config):
        if name == key:
            return field
    raise ConfigError(f"config: unknown key {key!r}; allowed keys: {', '.join(all_keys())}")


def describe_allowed(key: str) -> str:
    """What a key accepts, in words, for error messages and `config list`."""
    field = _field(key)
    ann = field.annotation
    origin = getattr(ann, "__origin__", None)
    if origin is Literal:
        return "one of " + ", ".join(map(str, ann.__args__))
    bounds = []
    for meta in field.metadata:
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            if getattr(meta, attr, None) is not None:
                bounds.append(f"{sign} {getattr(meta, attr)}")
    type_name = getattr(ann, "__name__", str(ann))
    if ann is bool:
        return "true or false"
    if key == "store.chroma_url":
        return "an http(s):// URL with a host, or empty for the embedded store"
    if origin is list:
        if key == "hooks.exclude":
            return "a comma-separated list of projects, folders or globs"
        # redact's one list names workspaces; every other list, folders
        return "a comma-separated list of " + (
            "workspaces" if key.startswith("redact.") else "folders"
        )
    return type_name + (" " + " and ".join(bounds) if bounds else "")


def _parse(key: str, raw: str) -> Any:
    """A value from text (CLI or environment) into the key's type; pydantic checks it after."""
    ann = _field(key).annotation
    if getattr(ann, "__origin__", None) is list:
        return [part.strip() for part in raw.split(",") if part.strip()]
    if ann is bool:
        lowered = raw.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
    return raw


def _nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        node = nested
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return nested


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in data.items():
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{prefix}{name}."))
        else:
            out[f"{prefix}{name}"] = value
    return out


def _validate(flat: Mapping[str, Any], origin: str) -> Config:
    try:
        return Config.model_validate(_nest(flat))
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        if key in all_keys():
            value = flat.get(key, err.get("input"))
            if is_secret(key):
                value = "***"  # a malformed key is still a key: never in an error
            allowed = describe_allowed(key)
            raise ConfigError(
                f"config: {key}={value!r} ({origin}) is not allowed: {allowed}"
            ) from exc
        raise ConfigError(
            f"config: unknown key {key!r} ({origin}); run 'imprint config list' for the keys"
        ) from exc


def _read_file(root: Path) -> dict[str, Any]:
    path = config_path(root)
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        msg = f"config: {path} is not UTF-8 text (byte {exc.start}); fix or remove the file"
        raise ConfigError(msg) from exc
    except IsADirectoryError as exc:
        raise ConfigError(f"config: {path} is a folder, not a file; remove or rename it") from exc
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"config: {path} cannot be read ({reason}); fix or remove it") from exc
    try:
        return flatten(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config: {path} is not valid TOML: {exc}") from exc
    except RecursionError as exc:
        raise ConfigError(f"config: {path} is not valid TOML: nested too deeply") from exc


def _read_env(environ: Mapping[str, str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key in all_keys():
        name = ENV_PREFIX + key.replace(".", "_").upper()
        if name in environ:
            found[key] = _parse(key, environ[name])
    return found


def env_name(key: str) -> str:
    return ENV_PREFIX + key.replace(".", "_").upper()


def key_origin(root: Path, key: str, environ: Mapping[str, str] | None = None) -> str:
    """Where a key's effective value comes from: "env", "config.toml" or "default"."""
    env = os.environ if environ is None else environ
    _field(key)
    if env_name(key) in env:
        return "env"
    if key in _read_file(root):
        return "config.toml"
    return "default"


def load_config(root: Path | None = None, environ: Mapping[str, str] | None = None) -> Config:
    """Defaults, then the file, then the environment; a bad value names where it came from."""
    env = os.environ if environ is None else environ
    root = data_dir(env) if root is None else root
    from_file = _read_file(root)
    _validate(from_file, f"in {config_path(root)}")
    from_env = _read_env(env)
    for key, value in from_env.items():
        _validate({**from_file, key: value}, f"from {ENV_PREFIX}{key.replace('.', '_').upper()}")
    return _validate({**from_file, **from_env}, "from the environment")


def get_value(config: Config, key: str) -> Any:
    _field(key)
    node: Any = config
    for part in key.split("."):
        node = getattr(node, part)
    return node


def set_value(root: Path, key: str, raw: str) -> Any:
    """Validate `key=raw` against the whole schema, then rewrite the file atomically."""
    _field(key)
    current = _read_file(root)
    updated = {**current, key: _parse(key, raw)}
    config = _validate(updated, "given")
    value = get_value(config, key)
    current[key] = value
    private_dir(root)
    atomic_write_text(config_path(root), tomli_w.dumps(_nest(current)))
    return value
