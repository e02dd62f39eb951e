"""Configuration: defaults, config.toml, environment overrides, `set`, and the config CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from imprint import _fs
from imprint.config import (
    LIVE_KEYS,
    Config,
    all_keys,
    describe_allowed,
    get_value,
    load_config,
    needs_restart,
    set_value,
)
from imprint.errors import ConfigError

IMPRINT = Path(sys.executable).with_name("imprint")


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty data dir that IMPRINT_DATA_DIR points at; no other IMPRINT_* variables set."""
    for name in list(os.environ):
        if name.startswith("IMPRINT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("IMPRINT_DATA_DIR", str(tmp_path))
    return tmp_path


def write_toml(root: Path, text: str) -> Path:
    path = root / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


# --- load_config ------------------------------------------------------------------------


def test_defaults_without_file_or_environment(root: Path) -> None:
    """With no config.toml and no IMPRINT_* variables, every value is the schema default."""
    config = load_config(root, environ={})
    assert config == Config()
    assert config.search.limit == 10
    assert config.recall.llm is False
    assert config.recall.llm_timeout_sec == 30.0
    assert config.tagger.local.n_threads == 4
    assert not (root / "config.toml").exists()


def test_file_values_override_defaults(root: Path) -> None:
    """Values in {data_dir}/config.toml replace the defaults, nested tables included."""
    write_toml(
        root,
        '[search]\nlimit = 20\nmode = "lexical"\n\n[tagger.local]\nn_threads = 8\n'
        '\n[ingest]\nallowed_roots = ["/src", "/docs"]\n',
    )
    config = load_config(root, environ={})
    assert config.search.limit == 20
    assert config.search.mode == "lexical"
    assert config.tagger.local.n_threads == 8
    assert config.ingest.allowed_roots == ["/src", "/docs"]
    assert config.search.max_chars == 4000


def test_environment_overrides_file_and_defaults(root: Path) -> None:
    """IMPRINT_<KEY> variables win over the file; nested keys use underscores for dots."""
    write_toml(root, "[recall]\nllm_timeout_sec = 12.0\n\n[tagger.local]\nn_threads = 8\n")
    environ = {"IMPRINT_RECALL_LLM_TIMEOUT_SEC": "45", "IMPRINT_TAGGER_LOCAL_N_THREADS": "1"}
    config = load_config(root, environ=environ)
    assert config.recall.llm_timeout_sec == 45.0
    assert config.tagger.local.n_threads == 1


def test_load_config_reads_the_process_environment(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without arguments, load_config uses IMPRINT_DATA_DIR and the process environment."""
    write_toml(root, "[search]\nlimit = 20\nrrf_k = 5\n")
    monkeypatch.setenv("IMPRINT_SEARCH_LIMIT", "7")
    config = load_config()
    assert config.search.limit == 7
    assert config.search.rrf_k == 5


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("true", True),
        ("TRUE", True),
        (" yes ", True),
        ("1", True),
        ("on", True),
        ("false", False),
        ("False", False),
        ("0", False),
        ("no", False),
        ("off", False),
    ],
)
def test_environment_booleans(root: Path, raw: str, expected: bool) -> None:
    """Boolean variables accept true/false, yes/no, on/off and 1/0 in any case."""
    config = load_config(root, environ={"IMPRINT_RECALL_LLM": raw, "IMPRINT_LOG_FILE": raw})
    assert config.recall.llm is expected
    assert config.log.file is expected


def test_environment_list_is_comma_separated(root: Path) -> None:
    """A list key from the environment is split at commas, blanks dropped."""
    config = load_config(root, environ={"IMPRINT_INGEST_ALLOWED_ROOTS": "/a, /b ,,/c"})
    assert config.ingest.allowed_roots == ["/a", "/b", "/c"]


@pytest.mark.parametrize(
    ("name", "raw", "key"),
    [
        ("IMPRINT_RECALL_LLM", "maybe", "recall.llm"),
        ("IMPRINT_SEARCH_LIMIT", "0", "search.limit"),
        ("IMPRINT_SEARCH_MODE", "fuzzy", "search.mode"),
        ("IMPRINT_TAGGER_LOCAL_N_THREADS", "many", "tagger.local.n_threads"),
    ],
)
def test_bad_environment_value_names_the_variable(
    root: Path, name: str, raw: str, key: str
) -> None:
    """A bad environment value raises ConfigError naming the variable, key, value and rule."""
    with pytest.raises(ConfigError) as info:
        load_config(root, environ={name: raw})
    message = str(info.value)
    assert name in message
    assert key in message
    assert repr(raw) in message
    assert describe_allowed(key) in message
    assert "\n" not in message


def test_bad_file_value_names_the_file(root: Path) -> None:
    """A bad value in config.toml raises ConfigError naming the file and the key."""
    path = write_toml(root, "[search]\nlimit = 99\n")
    with pytest.raises(ConfigError) as info:
        load_config(root, environ={})
    assert str(path) in str(info.value)
    assert "search.limit" in str(info.value)
    assert "<= 50" in str(info.value)


def test_unknown_key_in_file_is_an_error(root: Path) -> None:
    """An unknown key in config.toml raises ConfigError naming it."""
    write_toml(root, "[search]\nbogus = 1\n")
    with pytest.raises(ConfigError, match=r"unknown key 'search\.bogus'"):
        load_config(root, environ={})


def test_invalid_toml_is_a_config_error(root: Path) -> None:
    """A config.toml that is not TOML raises ConfigError, not a parser exception."""
    write_toml(root, "[search\nlimit = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(root, environ={})


# --- get_value / describe_allowed --------------------------------------------------------


def test_get_value_follows_dotted_keys() -> None:
    """get_value reads top-level and nested keys by their dotted name."""
    config = Config()
    assert get_value(config, "search.limit") == 10
    assert get_value(config, "tagger.local.n_ctx") == 4096
    assert get_value(config, "log.level") == "warning"


@pytest.mark.parametrize("key", ["search.bogus", "search", "tagger.local", "", "limit"])
def test_get_value_rejects_unknown_keys(key: str) -> None:
    """Group names and unknown keys are not keys; get_value raises ConfigError naming it."""
    with pytest.raises(ConfigError) as info:
        get_value(Config(), key)
    assert repr(key) in str(info.value)
    assert "search.limit" in str(info.value)  # the message lists the allowed keys


@pytest.mark.parametrize(
    ("key", "allowed"),
    [
        ("search.limit", "int >= 1 and <= 50"),
        ("search.mode", "one of hybrid, semantic, lexical"),
        ("recall.llm", "true or false"),
        ("recall.llm_timeout_sec", "float > 0 and <= 600"),
        ("log.level", "one of debug, info, warning, error"),
        ("tagger.model", "str"),
        ("ingest.allowed_roots", "a comma-separated list of folders"),
        ("store.chroma_url", "an http(s):// URL with a host, or empty for the embedded store"),
    ],
)
def test_describe_allowed(key: str, allowed: str) -> None:
    """describe_allowed states the type, bounds or choices of a key in words."""
    assert describe_allowed(key) == allowed


def test_every_key_has_a_description_and_a_default() -> None:
    """Each key can be described and read from a default Config."""
    assert len(all_keys()) == len(set(all_keys())) > 20
    for key in all_keys():
        assert describe_allowed(key)
        get_value(Config(), key)


# --- set_value ----------------------------------------------------------------------------


def test_set_value_writes_config_toml(root: Path) -> None:
    """set_value stores the typed value in {data_dir}/config.toml and load_config sees it."""
    assert set_value(root, "search.limit", "20") == 20
    assert set_value(root, "recall.llm", "yes") is True
    assert set_value(root, "recall.llm_timeout_sec", "45") == 45.0
    assert set_value(root, "ingest.allowed_roots", "/a, /b") == ["/a", "/b"]
    data = tomllib.loads((root / "config.toml").read_text(encoding="utf-8"))
    assert data == {
        "search": {"limit": 20},
        "recall": {"llm": True, "llm_timeout_sec": 45.0},
        "ingest": {"allowed_roots": ["/a", "/b"]},
    }
    config = load_config(root, environ={})
    assert config.search.limit == 20
    assert config.recall.llm is True


def test_set_value_creates_the_data_dir(tmp_path: Path) -> None:
    """set_value creates a data dir that does not exist yet."""
    root = tmp_path / "new" / "data"
    set_value(root, "search.mode", "semantic")
    assert load_config(root, environ={}).search.mode == "semantic"


def test_set_value_keeps_other_keys(root: Path) -> None:
    """Setting one key keeps the values of the others already in the file."""
    write_toml(root, "[search]\nlimit = 20\n\n[log]\nlevel = 'debug'\n")
    set_value(root, "search.mode", "lexical")
    config = load_config(root, environ={})
    assert (config.search.limit, config.search.mode, config.log.level) == (20, "lexical", "debug")


def test_set_value_stores_the_normalised_value(root: Path) -> None:
    """The stored value is the validated one (a chroma URL loses its trailing slash)."""
    assert set_value(root, "store.chroma_url", "http://127.0.0.1:8000/") == "http://127.0.0.1:8000"
    assert "8000/" not in (root / "config.toml").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("key", "raw"),
    [
        ("search.limit", "99"),
        ("search.limit", "0"),
        ("search.limit", "ten"),
        ("search.mode", "fuzzy"),
        ("recall.llm", "maybe"),
        ("recall.llm_timeout_sec", "0"),
        ("recall.llm_timeout_sec", "nan"),
        ("store.chroma_url", "ftp://example.com"),
        ("tagger.local.n_threads", "1000"),
    ],
)
def test_set_value_rejects_bad_values_and_leaves_the_file_alone(
    root: Path, key: str, raw: str
) -> None:
    """A bad value raises ConfigError naming key, value and rule; the file is byte-identical."""
    set_value(root, "search.rrf_k", "42")
    before = snapshot(root)
    with pytest.raises(ConfigError) as info:
        set_value(root, key, raw)
    message = str(info.value)
    assert key in message
    assert repr(raw) in message
    assert describe_allowed(key) in message
    assert "\n" not in message
    assert snapshot(root) == before


def test_set_value_bad_value_creates_no_file(root: Path) -> None:
    """A rejected value with no config.toml yet leaves the data dir empty."""
    with pytest.raises(ConfigError):
        set_value(root, "search.limit", "99")
    assert snapshot(root) == {}


@pytest.mark.parametrize("key", ["search.bogus", "nothing", "search", "tagger.local"])
def test_set_value_rejects_unknown_keys(root: Path, key: str) -> None:
    """An unknown key (or a group name) raises ConfigError naming it; nothing is written."""
    with pytest.raises(ConfigError) as info:
        set_value(root, key, "1")
    assert repr(key) in str(info.value)
    assert snapshot(root) == {}


def test_set_value_is_atomic_when_the_rename_fails(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the final rename fails, the old config.toml is intact and no temp file remains."""
    set_value(root, "search.limit", "20")
    before = snapshot(root)

    def fail(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(_fs.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        set_value(root, "search.limit", "30")
    assert snapshot(root) == before


def test_set_value_leaves_no_temporary_files(root: Path) -> None:
    """Repeated writes leave exactly one file, config.toml, in the data dir."""
    for limit in range(1, 6):
        set_value(root, "search.limit", str(limit))
    assert sorted(snapshot(root)) == ["config.toml"]


# --- CLI ------------------------------------------------------------------------------------


def run_cli(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("IMPRINT_")}
    base["IMPRINT_DATA_DIR"] = str(root)
    return subprocess.run(
        [str(IMPRINT), *args],
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_cli_config_set_bad_value_exits_2_with_one_line_error(root: Path) -> None:
    """`config set search.limit 99`: exit 2, one 'error:' line naming the key, file unchanged."""
    assert run_cli(root, "config", "set", "search.limit", "20").returncode == 0
    before = snapshot(root)
    result = run_cli(root, "config", "set", "search.limit", "99")
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error:")
    assert "search.limit" in lines[0]
    assert "99" in lines[0]
    assert "<= 50" in lines[0]
    assert snapshot(root) == before


def test_cli_config_set_bad_value_without_a_file_creates_none(root: Path) -> None:
    """A rejected `config set` on a fresh data dir writes nothing."""
    result = run_cli(root, "config", "set", "search.limit", "99")
    assert result.returncode == 2
    assert snapshot(root) == {}


def test_cli_config_set_unknown_key_exits_2(root: Path) -> None:
    """`config set` of an unknown key exits 2 with one error line naming the key."""
    result = run_cli(root, "config", "set", "search.bogus", "1")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error:")
    assert "search.bogus" in result.stderr
    assert snapshot(root) == {}


def test_cli_config_set_then_get(root: Path) -> None:
    """`config set` stores the value, prints it, and `config get` reads it back."""
    result = run_cli(root, "config", "set", "search.limit", "20")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "search.limit = 20"
    assert tomllib.loads((root / "config.toml").read_text(encoding="utf-8")) == {
        "search": {"limit": 20}
    }
    got = run_cli(root, "config", "get", "search.limit")
    assert (got.returncode, got.stdout) == (0, "20\n")


def test_cli_config_get_default_and_environment(root: Path) -> None:
    """`config get` prints the default, and an IMPRINT_* variable overrides it."""
    assert run_cli(root, "config", "get", "recall.llm_timeout_sec").stdout == "30.0\n"
    result = run_cli(
        root,
        "config",
        "get",
        "recall.llm_timeout_sec",
        env={"IMPRINT_RECALL_LLM_TIMEOUT_SEC": "45"},
    )
    assert (result.returncode, result.stdout) == (0, "45.0\n")


def test_cli_config_get_unknown_key_exits_2(root: Path) -> None:
    """`config get` of an unknown key exits 2 with one 'error:' line."""
    result = run_cli(root, "config", "get", "nope.key")
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("error:")
    assert "nope.key" in result.stderr


def test_cli_config_list_shows_every_key_once_with_its_rule(root: Path) -> None:
    """`config list` prints each key once, in schema order, with its value and allowed values."""
    run_cli(root, "config", "set", "search.limit", "20")
    result = run_cli(root, "config", "list")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(" = ", 1)[0] for line in lines] == all_keys()
    by_key = {line.split(" = ", 1)[0]: line for line in lines}
    assert by_key["search.limit"] == "search.limit = 20  # int >= 1 and <= 50"
    for key in all_keys():
        assert by_key[key].endswith(f"  # {describe_allowed(key)}")


def test_cli_config_list_masks_the_api_key(root: Path) -> None:
    """`config list` never prints a configured API key."""
    run_cli(root, "config", "set", "tagger.api_key", "sk-secret-value")
    result = run_cli(root, "config", "list")
    assert result.returncode == 0
    assert "sk-secret-value" not in result.stdout
    assert "tagger.api_key = set  # str" in result.stdout


def test_cli_config_never_prints_the_api_key_unless_revealed(root: Path) -> None:
    """`config set` echoes `set`, `config get` prints `set` / `not set`; only
    `config get --reveal` prints the key itself (issue 18 point 10)."""
    secret = "sk-secret-" + "7" * 20
    before = run_cli(root, "config", "get", "tagger.api_key")
    assert (before.returncode, before.stdout) == (0, "not set\n")
    stored = run_cli(root, "config", "set", "tagger.api_key", secret)
    assert (stored.returncode, stored.stdout) == (0, "tagger.api_key = set\n")
    got = run_cli(root, "config", "get", "tagger.api_key")
    assert (got.returncode, got.stdout) == (0, "set\n")
    shown = run_cli(root, "config", "get", "tagger.api_key", "--reveal")
    assert (shown.returncode, shown.stdout) == (0, secret + "\n")
    listed = run_cli(root, "config", "list")
    for result in (stored, got, listed):
        assert secret not in result.stdout + result.stderr
    # --reveal changes nothing for ordinary keys.
    assert run_cli(root, "config", "get", "search.limit", "--reveal").stdout == "10\n"


def test_provider_environment_keys_show_only_as_set(root: Path) -> None:
    """A provider's key from its environment variable shows as `set (from NAME)`, never
    its value, in `config list` and `config get`."""
    secret = "sk-env-" + "5" * 20
    env = {"OPENAI_API_KEY": secret, "IMPRINT_TAGGER_PROVIDER": "openai"}
    got = run_cli(root, "config", "get", "tagger.api_key", env=env)
    assert got.stdout == "set (from OPENAI_API_KEY)\n"
    listed = run_cli(root, "config", "list", env=env)
    assert "tagger.api_key = set (from OPENAI_API_KEY)  # str" in listed.stdout
    assert secret not in got.stdout + listed.stdout


def test_a_malformed_api_key_is_not_echoed_in_errors(root: Path) -> None:
    """A key of the wrong type in config.toml is refused without printing it; a Config's
    repr (as in a traceback) never shows the key either."""
    write_toml(root, "[tagger]\napi_key = 98765432101234\n")
    with pytest.raises(ConfigError) as info:
        load_config(root, environ={})
    assert "98765432101234" not in str(info.value) and "tagger.api_key" in str(info.value)
    config = Config()
    config.tagger.api_key = "sk-repr-0123456789"
    assert "sk-repr-0123456789" not in repr(config) and "sk-repr" not in str(config)


def test_device_context_shows_whether_a_key_is_set_never_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """device_context reports the provider key as set / not set (configured or from the
    provider's environment variable), never its value."""
    from imprint.actors.lifecycle import Runtime
    from imprint.reads.device import device_row
    from imprint.tools.device_context import format_device

    config = Config()
    config.tagger.provider = "openai"
    config.tagger.model = "gpt-x"
    config.tagger.api_key = "sk-conf-0123456789abcdef"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env-0123456789")
    rt = Runtime(tmp_path / "d1", config).start()
    try:
        text = format_device(device_row(rt))
    finally:
        rt.stop()
    assert "inference_api_key: set" in text
    assert "sk-conf" not in text and "sk-ant-env" not in text
    config.tagger.api_key = ""
    config.tagger.provider = "anthropic"
    rt = Runtime(tmp_path / "d2", config).start()
    try:
        text = format_device(device_row(rt))
    finally:
        rt.stop()
    assert "inference_api_key: set (from ANTHROPIC_API_KEY)" in text
    assert "sk-ant-env" not in text


def test_needs_restart_is_false_only_for_the_keys_read_on_every_call() -> None:
    """needs_restart: the three recall keys the running process reads on every call apply at
    once (the dashboard's LIVE_KEYS); every other key needs a restart; an unknown key is
    refused."""
    assert [k for k in all_keys() if not needs_restart(k)] == sorted(LIVE_KEYS)
    assert needs_restart("ingest.allow_private_urls") and needs_restart("embedding.threads")
    with pytest.raises(ConfigError):
        needs_restart("search.bogus")


def test_cli_config_set_with_no_owner_running_says_nothing_more(root: Path) -> None:
    """With no daemon or `serve --http` running, `config set` prints only the value (the next
    start reads the file), and `--restart` has nothing to restart."""
    for args in (("ingest.allow_private_urls", "true"), ("--restart", "search.limit", "20")):
        result = run_cli(root, "config", "set", *args)
        assert result.returncode == 0 and result.stderr == "", result.stderr
        assert result.stdout.count("\n") == 1
