"""One redaction for every write (issue 44 point 4): `store`, `kg_edit`, `ingest_content`,
file ingest and import redact the same secrets at the write gateway, the answer says how many
and of which kinds, and `redact.keep_secrets_in` keeps them for the workspaces it names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.actors.local_store import LocalStore
from imprint.config import Config
from imprint.reads.export import export_lines
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, search_text
from imprint.store.embedder import Embedder
from imprint.store.records import Fact, Record, WriteBatch
from imprint.types import MemoryId, WorkspaceName
from imprint.writes.facts import edit_facts
from imprint.writes.files import ingest_path
from imprint.writes.gateway import Writes
from imprint.writes.import_check import read_export
from imprint.writes.memories import remember
from imprint.writes.team_import import import_into
from tests.integration.conftest import imprint_stop, owner_env
from tests.support.fakes import FakeProvider
from tests.support.redact_writes import _aws_key, _github_token
from tests.support.wire import initialize_request

pytestmark = pytest.mark.timeout(300)

REPO = Path(__file__).resolve().parents[1]


def _files_holding(root: Path, needle: bytes) -> list[str]:
    """Every file under `root` (SQLite databases, their WAL, Chroma's segments, the logs, the
    journal) whose bytes hold `needle`."""
    return [
        str(p.relative_to(root))
        for p in sorted(root.rglob("*"))
        if p.is_file() and needle in p.read_bytes()
    ]


def _reply(out: IO[str], rid: int) -> dict[str, Any]:
    while True:
        line = out.readline()
        assert line, "imprint serve closed the session"
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == rid:
            return message


def _tool_texts(data_dir: Path, cwd: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """One MCP session over `imprint serve` (stdio, bridged to the data dir's daemon): each
    tool call's text answer, in order."""
    env = {**owner_env(data_dir), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "imprint.cli", "serve"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    answers = []
    try:
        proc.stdin.write(json.dumps(initialize_request("redact-test")) + "\n")
        proc.stdin.flush()
        assert "result" in _reply(proc.stdout, 1)
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        proc.stdin.write("\n")
        for rid, (name, args) in enumerate(calls, start=2):
            call = {"name": name, "arguments": args}
            message = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": call}
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            result = _reply(proc.stdout, rid)["result"]
            assert not result.get("isError"), result
            answers.append("".join(c.get("text", "") for c in result["content"]))
    finally:
        proc.stdin.close()
        proc.wait(timeout=120)
        proc.stdout.close()
    return answers


def test_a_key_stored_through_a_real_session_is_in_no_file_of_the_data_dir(
    tmp_path: Path,
) -> None:
    """`store`, `kg_edit` and `ingest_content` of texts holding real-format keys, through
    `imprint serve` and the daemon it starts: each answer says what was redacted, and after
    the daemon stops no file under the data dir (SQLite, WAL, Chroma, logs) holds a key's
    bytes, nor any 12 characters of one."""
    data_dir, cwd = tmp_path / "data", tmp_path / "work"
    cwd.mkdir()
    token, aws, other = _github_token(), _aws_key(), _github_token()
    answers = _tool_texts(
        data_dir,
        cwd,
        [
            ("store", {"content": f"The deploy bot uses {token} to push tags to GitHub."}),
            ("kg_edit", {"action": "add", "subject": "ci", "predicate": "uses key", "object": aws}),
            ("ingest_content", {"name": "notes.md", "content": f"# CI\n\nGH_TOKEN={other}\n"}),
            ("search", {"query": "deploy bot push tags"}),
        ],
    )
    assert "redacted 1 secret (github-token)" in answers[0], answers[0]
    assert "redacted 1 secret (aws-access-key)" in answers[1], answers[1]
    assert "redacted 1 secret" in answers[2], answers[2]
    assert "[redacted:github-token]" in answers[3] and token not in answers[3]
    done = imprint_stop(owner_env(data_dir))
    assert done.returncode == 0, done.stdout + done.stderr
    for key in (token, aws, other):
        for piece in {key, key[-12:], key[4:16]}:
            assert not _files_holding(data_dir, piece.encode()), (
                piece,
                _files_holding(data_dir, piece.encode()),
            )


def test_file_ingest_redacts_and_re_embeds_what_it_wrote(rt: Runtime, tmp_path: Path) -> None:
    """`ingest_path` embeds a file's chunks before it sends them: the chunks are written
    redacted, and their vectors are those of the redacted text (a search for the key's
    words finds the redacted chunk, and the key is nowhere in the data dir)."""
    token = _github_token()
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "deploy.md").write_text(f"# Deploy\n\nexport GITHUB_TOKEN={token}\n", "utf-8")
    ingest_path(rt, folder, project="p")
    rt.stop()
    assert not _files_holding(rt.data_dir, token.encode())


def test_a_workspace_named_in_keep_secrets_in_keeps_them(
    data_dir: Path, embedder: Embedder
) -> None:
    """With `redact.keep_secrets_in = ["vault"]`, a store into `vault` keeps the key as
    given and says nothing of redaction; the same store into another workspace redacts it;
    with `redact.enabled = false` nothing is redacted anywhere."""
    token = _github_token()
    config = Config()
    config.redact.keep_secrets_in = ["vault"]
    rt = Runtime(data_dir, config, embedder=embedder).start()
    try:
        writes = Writes(rt)
        kept = remember(writes, f"vault entry {token}", workspace="vault")
        cut = remember(writes, f"vault entry {token}", workspace="other")
        assert "redacted" not in kept.line() and "redacted 1 secret" in cut.line()
        found = search_text(ActorReads(rt), SearchArgs(query="vault entry"), workspace="vault")
        assert token in found
        rt.config.redact.enabled = False
        plain = edit_facts(writes, "add", "bot", "token", token, workspace="other")
        assert token in plain and "redacted" not in plain
    finally:
        rt.stop()


def test_the_tagging_model_is_sent_the_text_redacted(tmp_path: Path, embedder: Embedder) -> None:
    """With tagger.llm on (its provider may be a remote service), a memory holding a key is
    tagged from its redacted text: the key is in no prompt the provider was sent."""
    token = _github_token()
    tags = json.dumps({"type": "note", "domains": [], "topics": []})
    provider = FakeProvider(tokens=[tags])
    config = Config()
    config.tagger.llm = True
    config.tagger.provider = "local"
    rt = Runtime(
        tmp_path / "data", config, embedder=embedder, provider_factory=lambda: provider
    ).start()
    try:
        remember(Writes(rt), f"The release job pushes with {token} every night.")
    finally:
        rt.stop()
    assert provider.calls, "the model was not asked"
    sent = json.dumps([call["messages"] for call in provider.calls])
    assert token not in sent and "[redacted:github-token]" in sent


def test_an_export_moved_into_a_team_workspace_is_redacted(
    tmp_path: Path, embedder: Embedder
) -> None:
    """An export written before redaction (a key in a memory and in a fact) moved into a
    team workspace through `import_into` (here onto the local store behind the same seam)
    leaves the key in no file of the team store."""
    token, aws = _github_token(), _aws_key()
    old = LocalStore(tmp_path / "old", WorkspaceName("default"), embedder)
    try:
        memory = Record(
            id=MemoryId("m1"), content=f"the bot pushes with {token}", source_type="memory"
        )
        fact = Fact(id="f1", subject="ci", predicate="uses key", object=aws, valid_from=1.0)
        old.write(WriteBatch(upserts=(memory,), add_facts=(fact,)))
    finally:
        old.close()
    export = tmp_path / "export.jsonl"
    export.write_text("".join(export_lines(tmp_path / "old", [WorkspaceName("default")])))
    team = LocalStore(tmp_path / "team", WorkspaceName("default"), embedder)
    try:
        report = import_into(read_export(export), team, actor="import")
    finally:
        team.close()
    assert report.records == 1 and report.facts == 1
    for key in (token, aws):
        assert not _files_holding(tmp_path / "team", key.encode()), key
