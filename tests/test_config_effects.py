"""Every key of the config schema takes effect: a probe shows the change, or a named test does.

`PROBES` change one key from its default and show that the output changes. `ELSEWHERE` names
the test that already proves a key (checked to exist here, so the list cannot rot), and
`AT_START` lists keys read once when a process or an entry point starts, with the reason.
Together they must cover `all_keys()` exactly: a new key without a proof fails this file.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.config import Config, all_keys, load_config
from imprint.errors import ImprintError
from imprint.reads.chunks import FileChunksArgs, chunk_rows
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, search_text
from imprint.recall.respond import RecallArgs, recall_text
from imprint.store.embedder import Embedder
from imprint.writes.content import checked_path
from imprint.writes.files import ingest_path
from imprint.writes.gateway import Writes
from tests.conftest import TOPICS, write_tree

ELSEWHERE: dict[str, tuple[str, str]] = {
    **{
        f"team.{key}": (
            "tests/integration/test_team_server.py",
            "test_the_team_keys_configure_the_server",
        )
        for key in ("database", "issuer", "resource", "teams_claim")
    },
    "redact.enabled": (
        "tests/test_redact_writes.py",
        "test_a_workspace_named_in_keep_secrets_in_keeps_them",
    ),
    "redact.keep_secrets_in": (
        "tests/test_redact_writes.py",
        "test_a_workspace_named_in_keep_secrets_in_keeps_them",
    ),
    "search.vector_weight": (
        "tests/test_search_ranking.py",
        "test_search_weights_from_config_change_the_hybrid_order",
    ),
    "search.lexical_weight": (
        "tests/test_search_ranking.py",
        "test_search_weights_from_config_change_the_hybrid_order",
    ),
    "search.phrase_weight": (
        "tests/test_search_ranking.py",
        "test_fusion_weights_and_k_come_from_search_settings",
    ),
    "search.coverage_weight": (
        "tests/test_search_ranking.py",
        "test_fusion_weights_and_k_come_from_search_settings",
    ),
    "search.rerank_depth": (
        "tests/test_search_ranking.py",
        "test_fusion_weights_and_k_come_from_search_settings",
    ),
    "search.history_weight": (
        "tests/test_search_sources.py",
        "test_a_history_page_gives_way_unless_the_question_asks_when",
    ),
    "embedding.query_cache_size": (
        "tests/test_query_embedder.py",
        "test_query_cache_size_comes_from_config",
    ),
    "store.near_duplicate": (
        "tests/test_supersede.py",
        "test_a_paraphrase_answers_the_first_id_when_near_duplicate_is_set",
    ),
    "backup.every_hours": (
        "tests/test_rolling_backups.py",
        "test_a_daemon_with_every_hours_makes_a_verified_rolling_backup",
    ),
    "backup.keep": (
        "tests/test_rolling_backups.py",
        "test_a_backup_is_made_when_due_verified_and_only_the_newest_rolling_ones_kept",
    ),
    "store.min_free_mb": (
        "tests/test_limits.py",
        "test_min_free_mb_refuses_a_write_before_it_is_embedded_or_reaches_chroma",
    ),
    "ingest.allow_private_urls": (
        "tests/test_ingest_url.py",
        "test_loopback_url_is_fetched_when_allowed",
    ),
    "ingest.max_chunks_per_source": (
        "tests/test_hardening.py",
        "test_chunks_per_source_are_capped_with_a_clear_error",
    ),
    "ingest.url_timeout_sec": (
        "tests/test_ingest_url.py",
        "test_trickling_server_hits_the_total_limit",
    ),
    "embedding.model_path": (
        "tests/test_device_context.py",
        "test_device_context_names_the_real_embedder",
    ),
    "readers.pool_size": (
        "tests/test_store.py",
        "test_a_pool_of_one_runs_two_searches_one_after_the_other",
    ),
    "ingest.max_file_bytes": (
        "tests/test_store.py",
        "test_binaries_and_oversized_files_are_skipped",
    ),
    "tagger.llm": ("tests/test_tagging.py", "test_store_takes_the_models_tags_and_records_it"),
    "tagger.provider": (
        "tests/test_recall_model.py",
        "test_remote_and_lan_providers_are_never_called_and_noted",
    ),
    "tagger.model": ("tests/test_providers.py", "test_vllm_streams_and_sends_a_json_schema"),
    "tagger.base_url": (
        "tests/test_providers.py",
        "test_the_client_and_the_locality_check_judge_the_same_url",
    ),
    "tagger.api_key": ("tests/test_providers.py", "test_openai_sends_bearer_key_and_strict_schema"),
    "tagger.timeout_sec": (
        "tests/test_tagging.py",
        "test_a_slow_model_is_given_up_at_tagger_timeout",
    ),
    "recall.llm_timeout_sec": (
        "tests/test_recall_model.py",
        "test_one_deadline_covers_planning_and_answering",
    ),
    "recall.pool_size": (
        "tests/test_reads_layer.py",
        "test_recall_actors_are_pooled_not_started_per_recall",
    ),
    "recall.step_runners": (
        "tests/test_reads_layer.py",
        "test_recall_actors_are_pooled_not_started_per_recall",
    ),
    "server.idle_exit_sec": (
        "tests/integration/test_serve.py",
        "test_a_killed_daemon_is_replaced_and_recovers",
    ),
    "hooks.context_chars": (
        "tests/test_hooks_entry.py",
        "test_hook_settings_match_the_schema_and_read_file_and_environment",
    ),
    "hooks.prompt_submit": (
        "tests/test_hooks_entry.py",
        "test_prompt_submit_is_off_by_default_and_asks_nothing",
    ),
    "hooks.exclude": (
        "tests/test_hooks_entry.py",
        "test_an_excluded_folder_is_neither_briefed_nor_captured",
    ),
    "hooks.timeout_ms.session_start": (
        "tests/test_hooks_entry.py",
        "test_a_hook_past_its_deadline_exits_0_with_nothing_printed",
    ),
    "hooks.timeout_ms.prompt_submit": (
        "tests/test_hooks_entry.py",
        "test_hook_settings_match_the_schema_and_read_file_and_environment",
    ),
    "hooks.timeout_ms.capture": (
        "tests/test_hooks_entry.py",
        "test_hook_settings_match_the_schema_and_read_file_and_environment",
    ),
    "server.http_read_timeout_sec": (
        "tests/integration/test_loopback_users.py",
        "test_another_user_with_the_bearer_token_gets_nothing_from_serve_http",
    ),
}

AT_START: dict[str, str] = {
    "team.host": "the team server's listen address, bound when `serve --http --database` starts",
    "embedding.threads": "onnxruntime session options, set when the embedder loads (once)",
    "embedding.batch_size": "batching inside the embedder; same vectors, only speed changes",
    "embedding.max_tokens": "tokenizer truncation, set when the embedder loads (once)",
    "embedding.tokenizer_path": "the tokenizer file, opened when the embedder loads (once)",
    "tagger.local.model_path": "the GGUF file, opened on the model's first request; "
    "tests/integration/test_local_model.py loads it",
    "tagger.local.n_threads": "llama.cpp threads, fixed when the model loads",
    "tagger.local.n_ctx": "llama.cpp context window, fixed when the model loads",
    "tagger.local.chat_format": "llama.cpp chat template override, fixed when the model loads",
    "server.http_port": "the port `imprint serve --http` binds when it starts",
    "server.http_max_connections": "uvicorn's limit_concurrency, set when the dashboard or "
    "`serve --http` starts; tests/test_loopback.py::test_connections_over_the_cap_get_503",
    "log.level": "stderr level, set when an entry point configures logging",
    "log.file": "the JSON-lines file handler, set when an entry point configures logging",
    "log.max_bytes": "rotation size of the JSON log, set when an entry point configures "
    "logging; tests/test_dashboard.py::test_log_rotates_at_max_bytes_keeping_n_files",
    "log.keep": "rotated files kept, set when an entry point configures logging (same test)",
    "ingest.url_concurrency": "the fetch limiter's size, made when the ingest_url tool is "
    "registered; tests/test_ingest_url.py::test_fetches_never_hold_the_threads_reads_need",
}

LONG = " ".join(
    f"Sentence {i} about heron migration and the herons flying south." for i in range(80)
)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("effects")
    return write_tree(root / "proj", {**TOPICS, "docs/herons.md": LONG})


def _runtime(data: Path, embedder: Embedder, tree: Path, **keys: Any) -> Runtime:
    config = Config()
    for key, value in keys.items():
        group, leaf = key.split("__")
        setattr(getattr(config, group), leaf, value)
    rt = Runtime(data, config, embedder=embedder).start()
    ingest_path(rt, tree, project="proj")
    return rt


Probe = Callable[[Runtime, Path], str]


def _search(rt: Runtime, cwd: Path) -> str:
    return search_text(ActorReads(rt), SearchArgs(query="heron migration espresso"))


def _recall_plan(rt: Runtime, cwd: Path) -> str:
    plan = [
        {"tool": "search", "args": {"query": "heron migration"}},
        {"tool": "list_sources", "args": {}},
    ]
    return recall_text(ActorReads(rt), RecallArgs(question="herons", plan=plan))


def _recall_plain(rt: Runtime, cwd: Path) -> str:
    return recall_text(ActorReads(rt), RecallArgs(question="heron migration espresso"))


def _chunks(rt: Runtime, cwd: Path) -> str:
    reads = ActorReads(rt)
    asked = FileChunksArgs(source="docs/herons.md", start=0, end=49, project="proj")
    rows = chunk_rows(reads, reads.open(""), asked)
    return "\n".join(f"{len(r.content)}: {r.content[:40]}" for r in rows.records)


def _roots(rt: Runtime, cwd: Path) -> str:
    outside = cwd.parent / "outside"
    outside.mkdir(exist_ok=True)
    try:
        return str(checked_path(Writes(rt, cwd), str(outside)))
    except ImprintError as exc:
        return f"refused: {exc}"


def _search_error(rt: Runtime, cwd: Path) -> str:
    try:
        return _search(rt, cwd)
    except ImprintError as exc:
        return f"error: {exc}"


def _where_vectors_live(rt: Runtime, cwd: Path) -> str:
    local = sorted(p.name for p in rt.data_dir.rglob("chroma.sqlite3"))
    return f"{_search(rt, cwd).splitlines()[0]}; local Chroma files: {local}"


# key -> (changed value, probe): the probe's output with the value differs from the default's.
PROBES: dict[str, tuple[Any, Probe]] = {
    "store.chroma_url": ("(the chroma_server fixture)", _where_vectors_live),
    "search.limit": (2, _search),
    "search.mode": ("lexical", _search),
    "search.max_chars": (1200, _search),
    "search.rrf_k": (1, _search),
    "readers.timeout_sec": (1e-9, _search_error),
    "recall.step_timeout_sec": (1e-9, _recall_plan),
    "recall.llm": (True, _recall_plain),
    "ingest.chunk_chars": (300, _chunks),
    "ingest.chunk_overlap": (0, _chunks),
    "ingest.allowed_roots": ("outside", _roots),
}


def test_every_key_is_proved_somewhere() -> None:
    """Each schema key has a probe here, a named test elsewhere, or a start-only reason."""
    places = [set(PROBES), set(ELSEWHERE), set(AT_START)]
    assert sum(len(p) for p in places) == len(set().union(*places)), "a key is listed twice"
    assert set().union(*places) == set(all_keys())
    root = Path(__file__).resolve().parents[1]
    for key, (path, name) in ELSEWHERE.items():
        where = f"{path}::{name}"
        module = importlib.import_module(path[:-3].replace("/", "."))
        assert callable(getattr(module, name, None)), f"{key}: {where} does not exist"
        assert (root / path).is_file()


@pytest.mark.parametrize("key", sorted(PROBES))
def test_changing_the_key_changes_the_output(
    key: str, tree: Path, tmp_path: Path, embedder: Embedder, request: pytest.FixtureRequest
) -> None:
    """With the key set away from its default, the probe's output differs."""
    value, probe = PROBES[key]
    if key == "ingest.allowed_roots":
        value = [str(tmp_path / "outside")]
    if key == "store.chroma_url":
        value = request.getfixturevalue("chroma_server")
    field = key.replace(".", "__")
    outputs = []
    (tmp_path / "cwd").mkdir()
    for n, keys in enumerate(({}, {field: value})):
        rt = _runtime(tmp_path / f"data{n}", embedder, tree, **keys)
        try:
            outputs.append(probe(rt, tmp_path / "cwd"))
        finally:
            rt.stop()
    default, changed = outputs
    assert default != changed, f"{key}={value!r} changed nothing:\n{changed}"


def test_search_config_is_read_from_the_environment(
    tree: Path, tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """IMPRINT_SEARCH_* set the defaults of search and of recall, which stay byte-identical."""
    monkeypatch.setenv("IMPRINT_SEARCH_MAX_CHARS", "1200")
    monkeypatch.setenv("IMPRINT_SEARCH_LIMIT", "3")
    monkeypatch.setenv("IMPRINT_SEARCH_MODE", "semantic")
    rt = _runtime(tmp_path / "data", embedder, tree)
    rt.config = load_config(tmp_path / "data")
    try:
        text = search_text(ActorReads(rt), SearchArgs(query=LONG[:60]))
        assert len(text) <= 1200 and "(semantic): 3 results" in text.splitlines()[0]
        assert recall_text(ActorReads(rt), RecallArgs(question=LONG[:60])) == text
        # A caller's own value still wins over the config.
        explicit = search_text(
            ActorReads(rt), SearchArgs(query=LONG[:60], limit=5, mode="hybrid"), max_chars=8000
        )
        assert "(hybrid): 5 results" in explicit and len(explicit) > 1200
    finally:
        rt.stop()


def test_a_step_with_the_configured_default_repeats_the_step_without_it(
    tree: Path, tmp_path: Path, embedder: Embedder
) -> None:
    """Plan validation resolves config defaults: limit=3 under search.limit=3 is a repeat."""
    rt = _runtime(tmp_path / "data", embedder, tree, search__limit=3)
    try:
        plan = [
            {"tool": "search", "args": {"query": "x"}},
            {"tool": "search", "args": {"query": "x", "limit": 3}},
        ]
        with pytest.raises(ImprintError, match=r"^plan: step 2 repeats step 1"):
            recall_text(ActorReads(rt), RecallArgs(question="x", plan=plan))
        plan[1]["args"]["limit"] = 4  # type: ignore[index]
        assert re.match(
            r'recall "x": 2 steps', recall_text(ActorReads(rt), RecallArgs(question="x", plan=plan))
        )
    finally:
        rt.stop()
