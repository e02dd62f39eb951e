"""Code chunks in the store: symbol and lines stored and shown in search headers, symbol
paths indexed for identifier-aware lexical matching, and a store indexed by the old
chunker re-chunked when opened (text format 3)."""

from __future__ import annotations

import json
import re
import sqlite3
import textwrap
from pathlib import Path

import numpy as np
import pytest

from imprint.actors._rechunk import Rechunk
from imprint.actors.lifecycle import Runtime
from imprint.actors.writer import Writer
from imprint.chunking import TREE_LANGUAGES
from imprint.chunking._tree import _LOCAL
from imprint.hooks.cold import store_file
from imprint.reads.chunks import FileChunksArgs, chunk_rows
from imprint.reads.export import export_lines
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, SearchHit, SearchRows, format_search, search
from imprint.store.context import TEXT_FORMAT, symbol_words
from imprint.store.embedder import Embedder
from imprint.store.records import HEAD_SHOWN, Record, shown_head
from imprint.store.schema import prepare
from imprint.store.sqlite_read import SqliteReader
from imprint.store.workspace import WorkspaceStore
from imprint.tools.file_chunks import format_chunks
from imprint.types import MemoryId, WorkspaceName
from imprint.writes.files import ingest_path
from tests.conftest import write_tree
from tests.support.context import _small_chunks

ACTOR = textwrap.dedent(
    '''\
    """Actors and the references that reach them."""

    import queue


    class ActorRef:
        """A reference to a running actor; what callers hold instead of the actor."""

        def __init__(self, inbox):
            self._inbox = inbox
            self._stopped = False

        def tell(self, message):
            """Deliver without waiting for an answer; the caller goes on at once."""
            self._inbox.put(message)

        def ask(self, message, block=True, timeout=None):
            """Deliver and wait for the answer, or return a future to wait on later."""
            reply = queue.Queue(maxsize=1)
            self._inbox.put((message, reply))
            return reply.get(timeout=timeout) if block else reply
    '''
)
OTHER = "def unrelated():\n    return 'nothing about references here'\n"


@pytest.fixture
def ingested(tmp_path: Path, embedder: Embedder, request: pytest.FixtureRequest) -> Runtime:
    files = {"pykka/_actor.py": ACTOR, "other.py": OTHER}
    rt = Runtime(tmp_path / "data", _small_chunks(), embedder=embedder).start()
    request.addfinalizer(rt.stop)
    ingest_path(rt, write_tree(tmp_path / "proj", files), project="proj")
    return rt


def test_symbol_words_spell_out_the_identifiers() -> None:
    """A symbol path's words are its identifiers' parts; a plain path adds none."""
    assert symbol_words("BaseClient._redirect_headers") == "base client redirect headers"
    assert symbol_words("ActorRef.tell, ActorRef.ask") == "actor ref tell actor ref ask"
    assert symbol_words("helper") == ""


def test_a_code_hit_shows_its_symbol_and_lines_and_indexes_them_unseen(ingested: Runtime) -> None:
    """The header reads `_actor.py#N ActorRef.tell L13-15` (then the file's other matching
    chunks, `+#0`, when it has some); the symbol path is in the indexed context, not in the
    shown excerpt."""
    rows = search(ActorReads(ingested), SearchArgs(query="ActorRef.tell", mode="lexical"))
    top = rows.hits[0].record
    assert (top.symbol, top.line_start, top.line_end) == ("ActorRef.tell", 13, 15)
    assert "ActorRef.tell | actor ref tell" in top.context
    shown = format_search(rows, 4000)
    assert f"| pykka/_actor.py#{top.chunk_index} ActorRef.tell L13-15 " in shown
    assert re.search(
        rf"\| pykka/_actor\.py#{top.chunk_index} ActorRef\.tell L13-15(?: \+#[\d,#]+)? \| ", shown
    )
    assert "actor ref tell" not in shown


@pytest.mark.parametrize("query", ["ActorRef.tell", "actor_ref tell", "tell on ActorRef"])
def test_symbol_paths_match_as_identifiers_are_written(ingested: Runtime, query: str) -> None:
    """Dotted, snake_case and spelled-out forms of a symbol path find its chunk first."""
    rows = search(ActorReads(ingested), SearchArgs(query=query, mode="lexical"))
    assert rows.hits[0].record.symbol == "ActorRef.tell", [h.record.symbol for h in rows.hits]


def test_an_old_chunker_store_is_rechunked_from_unchanged_files(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Opened at text format 2, the writer re-chunks a code file that is still as ingested
    (new chunks with symbols replace the old ones, vectors included), keeps a changed
    file's old chunks with a fresh context line, reports progress, then records this
    version's format."""
    files = {"pykka/_actor.py": ACTOR, "other.py": OTHER, "zz.py": OTHER}
    tree = write_tree(tmp_path / "proj", files)
    data = tmp_path / "data"
    saved = dict(TREE_LANGUAGES)
    TREE_LANGUAGES.clear()  # the line chunker, as the version before wrote the store
    try:
        rt = Runtime(data, _small_chunks(), embedder=embedder).start()
        ingest_path(rt, tree, project="proj")
        rt.stop()  # the writer's idle work (index merges) must not share the connection
        older = WorkspaceStore(data, WorkspaceName("default"), embedder)
        try:
            older.sqlite.set_meta("text_format", "2")
        finally:
            older.close()
    finally:
        TREE_LANGUAGES.update(saved)
    (tree / "other.py").write_text(OTHER + "\n# edited since\n", encoding="utf-8")

    store = WorkspaceStore(data, WorkspaceName("default"), embedder)
    try:
        sqlite = store.sqlite
        old_other = sqlite.source_records("proj", "other.py")
        assert not any(r.symbol for r in sqlite.source_records("proj", "pykka/_actor.py"))
        writer = Writer(store, embedder, rechunk=Rechunk(target=300, overlap=0))
        # other.py (changed: nothing to write), then _actor.py's chunks fill the step.
        assert writer.reindex_step(limit=1) is True
        assert writer.reindex_progress() == {"done": 2, "total": 3}
        while writer.reindex_step(limit=1):
            pass
        assert sqlite.text_format() == TEXT_FORMAT == 6
        actor = sqlite.source_records("proj", "pykka/_actor.py")
        assert "ActorRef.tell" in [r.symbol for r in actor]
        assert all(r.line_start > 0 and r.chunk_count == len(actor) for r in actor)
        entry = sqlite.source_entry("proj", "pykka/_actor.py")
        assert entry is not None and entry.chunk_count == len(actor)
        other = sqlite.source_records("proj", "other.py")
        assert [r.content for r in other] == [r.content for r in old_other]
        assert all(r.symbol == "" and r.context == "other" for r in other)
        ids = sqlite.ids()
        got = store.vectors.collection.get(ids=list(ids))  # type: ignore[attr-defined]
        assert set(got["ids"]) == ids and sqlite.journal_pending() == []
    finally:
        store.close()


LONG = (
    "def long_one(values, *, scale):\n"
    + "".join(f"    total_{i} = sum(values[{i}:]) * {i}\n" for i in range(40))
    + "    marker_zebra = total_0\n"
    + "    return marker_zebra\n"
)


def test_a_hit_on_a_later_piece_shows_its_signature_unindexed(
    tmp_path: Path, embedder: Embedder
) -> None:
    """The last piece of a long function is shown under `def long_one(values, *, scale):`
    and an elision line; the signature is not indexed (`scale` finds the first piece only)."""
    rt = Runtime(tmp_path / "data", _small_chunks(), embedder=embedder).start()
    try:
        ingest_path(rt, write_tree(tmp_path / "proj", {"long.py": LONG}), project="proj")
        reads = ActorReads(rt)
        rows = search(reads, SearchArgs(query="marker_zebra", mode="lexical"))
        last = rows.hits[0].record
        assert last.chunk_index > 0 and last.head == "def long_one(values, *, scale):\n    ..."
        assert "def long_one" not in last.content
        shown = format_search(rows, 4000)
        assert f"long.py#{last.chunk_index} long_one L" in shown
        assert "def long_one(values, *, scale): ... " in shown.replace("\n", " ")
        scale = search(reads, SearchArgs(query="scale", mode="lexical"))
        assert [h.record.chunk_index for h in scale.hits] == [0]
        # Reading around the hit with file_chunks: the range's first chunk (a later piece)
        # opens with the signature; the next ones follow it, without it again.
        at = last.chunk_index - 1
        args = FileChunksArgs(source="long.py", start=at, end=last.chunk_index)
        read = format_chunks(chunk_rows(reads, WorkspaceName("default"), args))
        blocks = read.split("\n\n--- #")
        assert blocks[1].startswith(f"{at} ") and "\ndef long_one(values, *, scale):\n" in blocks[1]
        assert "def long_one" not in blocks[2]
        whole = format_chunks(
            chunk_rows(reads, WorkspaceName("default"), FileChunksArgs(source="long.py"))
        )
        assert whole.count("def long_one") == 1  # chunk 0's own line
    finally:
        rt.stop()


def _counting(embedder: Embedder, embedded: list[str]) -> Embedder:
    """`embedder`, noting into `embedded` every text it is asked to embed."""

    class Counting(Embedder):
        def embed(self, texts, **kwargs):  # type: ignore[no-untyped-def]
            embedded.extend(texts)
            return embedder.embed(texts, **kwargs)

    counting = Counting.__new__(Counting)
    counting.__dict__.update(embedder.__dict__)
    return counting


DECORATED = (
    "@app.get('/items')\n"
    "def list_items(values, *, scale):\n"
    "    # the body opens with a comment\n"
    + "".join(f"    total_{i} = sum(values[{i}:]) * {i}\n" for i in range(40))
    + "    return total_0\n"
)


def test_a_format_5_store_gets_decorated_signatures_and_rewrites_nothing_else(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Opened at text format 5 (a head without the decorators, with the comment that opens
    the body), the writer re-chunks that file: its later pieces get
    `@app.get('/items')` / `def list_items(...)`, ids and text as they were; a file whose
    chunks are the same is not written (its records are embedded no more)."""
    tree = write_tree(tmp_path / "proj", {"items.py": DECORATED, "pykka/_actor.py": ACTOR})
    data = tmp_path / "data"
    rt = Runtime(data, _small_chunks(), embedder=embedder).start()
    ingest_path(rt, tree, project="proj")
    rt.stop()
    new_head = "@app.get('/items')\ndef list_items(values, *, scale):\n    ..."
    old_head = "def list_items(values, *, scale):\n    # the body opens with a comment\n    ..."
    store = WorkspaceStore(data, WorkspaceName("default"), embedder)
    try:
        sqlite = store.sqlite
        before = sqlite.source_records("proj", "items.py")
        assert len(before) > 2 and {r.head for r in before[1:]} == {new_head}
        with sqlite.conn:  # as format 5 chunked it
            sqlite.conn.execute("UPDATE records SET head = ? WHERE head != ''", (old_head,))
        sqlite.set_meta("text_format", "5")
        actor = [
            (r.id, r.head, r.content) for r in sqlite.source_records("proj", "pykka/_actor.py")
        ]
        embedded: list[str] = []
        counting = _counting(embedder, embedded)
        writer = Writer(store, counting, rechunk=Rechunk(target=300, overlap=0))
        while writer.reindex_step(limit=1000):
            pass
        assert sqlite.text_format() == TEXT_FORMAT
        after = sqlite.source_records("proj", "items.py")
        assert [(r.id, r.content) for r in after] == [(r.id, r.content) for r in before]
        assert after[0].head == "" and {r.head for r in after[1:]} == {new_head}
        assert sorted(embedded) == sorted(r.indexed_text for r in after)  # items.py alone
        assert [
            (r.id, r.head, r.content) for r in sqlite.source_records("proj", "pykka/_actor.py")
        ] == actor
    finally:
        store.close()


def test_a_format_3_store_gets_signatures_and_keeps_what_is_unchanged(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opened at text format 3 (tree-sitter chunks without signatures), the writer re-chunks
    a long function so its later pieces carry `def long_one(...)`, keeps the ids, text and
    tags of a file this version chunks the same, and embeds every code chunk again without
    its symbol words (format 5)."""
    tree = write_tree(tmp_path / "proj", {"long.py": LONG, "pykka/_actor.py": ACTOR})
    data = tmp_path / "data"
    with monkeypatch.context() as patched:
        patched.setattr("imprint.chunking._tree.SIGNATURE_CHARS", 0)  # as format 3 chunked
        rt = Runtime(data, _small_chunks(), embedder=embedder).start()
        ingest_path(rt, tree, project="proj")
        rt.stop()
    store = WorkspaceStore(data, WorkspaceName("default"), embedder)
    try:
        sqlite = store.sqlite
        sqlite.set_meta("text_format", "3")
        before = sqlite.source_records("proj", "long.py")
        actor = [(r.id, r.head) for r in sqlite.source_records("proj", "pykka/_actor.py")]
        assert len(before) > 2 and all(r.head == "" for r in before)
        # A later piece's own tags stay with it (not the first chunk's).
        with sqlite.conn:
            sqlite.conn.execute(
                "UPDATE records SET topics = ? WHERE id = ?", ('["kept-topic"]', before[2].id)
            )
        # As format 4 embedded them: the whole context line, symbol words included.
        olds = [r for r in before if symbol_words(r.symbol)]
        worded_texts = [f"{r.context}\n{r.content}" for r in olds]
        store.vectors.collection.update(  # type: ignore[attr-defined]
            ids=[r.id for r in olds], embeddings=embedder.embed(worded_texts).tolist()
        )
        vectors = {r.id: store.vectors.embedding_of(r.id) for r in olds}
        embedded: list[str] = []
        counting = _counting(embedder, embedded)
        writer = Writer(store, counting, rechunk=Rechunk(target=300, overlap=0))
        while writer.reindex_step(limit=1000):
            pass
        assert sqlite.text_format() == TEXT_FORMAT == 6
        # Before format 5 a code chunk was embedded with its symbol words: each is embedded
        # again, once, as this version embeds it (the context line without the words).
        code = [
            *sqlite.source_records("proj", "long.py"),
            *sqlite.source_records("proj", "pykka/_actor.py"),
        ]
        assert sorted(embedded) == sorted(r.indexed_text for r in code)
        worded = [r for r in code if symbol_words(r.symbol)]
        assert worded
        for r in worded:
            assert r.context.endswith(" | " + symbol_words(r.symbol))
            assert r.indexed_text.split("\n", 1)[0] == r.context.rpartition(" | ")[0]
        for r in code:
            want = embedder.embed([r.indexed_text])[0]
            assert np.allclose(store.vectors.embedding_of(r.id), want, atol=1e-5), r.id
        moved = [r.id for r in worded if r.id in vectors]
        assert len(moved) == len(vectors) > 0 and all(
            not np.allclose(store.vectors.embedding_of(rid), vectors[rid], atol=1e-4)
            for rid in moved
        )
        after = sqlite.source_records("proj", "long.py")
        assert [(r.id, r.content) for r in after] == [(r.id, r.content) for r in before]
        assert after[0].head == "" and all(
            r.head == "def long_one(values, *, scale):\n    ..." for r in after[1:]
        )
        assert after[2].topics == ("kept-topic",) and after[1].topics != ("kept-topic",)
        assert [(r.id, r.head) for r in sqlite.source_records("proj", "pykka/_actor.py")] == actor
        assert sqlite.journal_pending() == []
    finally:
        store.close()


def test_a_store_no_writer_has_migrated_yet_is_read_with_the_newer_columns_empty(
    ingested: Runtime,
) -> None:
    """A store an older version wrote lacks the columns added since (format 3 had no
    `head`, format 2 no `symbol` or lines): before any writer has opened it, a read-only
    reader (an export, a session-start briefing) reads its records with those columns at
    their defaults (it failed with "no such column: r.head"), and reads them in full once a
    writer has added them back, without being opened again."""
    data = ingested.data_dir
    ingested.stop()
    path = store_file(data)
    with sqlite3.connect(path) as conn:
        count = conn.execute("SELECT count(*) FROM records").fetchone()[0]
        for column in ("head", "line_end", "line_start", "symbol"):
            conn.execute(f"ALTER TABLE records DROP COLUMN {column}")
    reader = SqliteReader(path)
    try:
        records = reader.fetch(reader.ids())
        assert len(records) == count > 0
        assert all((r.symbol, r.line_start, r.head) == ("", 0, "") for r in records.values())
        lines = [json.loads(line) for line in export_lines(data, [WorkspaceName("default")])]
        chunks = [c for line in lines if line["line"] == "source" for c in line["chunks"]]
        assert len(chunks) == count and all(c["head"] == "" for c in chunks)
        with sqlite3.connect(path) as conn:  # a writer migrates it while the reader reads
            prepare(conn)
            conn.execute("UPDATE records SET symbol = 'ActorRef.tell', head = 'def tell():'")
        again = reader.fetch(reader.ids())
        assert {(r.symbol, r.head) for r in again.values()} == {("ActorRef.tell", "def tell():")}
    finally:
        reader.close()


def test_a_rechunk_never_replaces_symbol_chunks_with_line_chunks(
    tmp_path: Path, embedder: Embedder
) -> None:
    """A store re-indexed while no grammar loads (the chunker falls back to lines) keeps
    the chunks its parse gave, symbols, lines and vectors, and records this format."""
    tree = write_tree(tmp_path / "proj", {"pykka/_actor.py": ACTOR})
    data = tmp_path / "data"
    rt = Runtime(data, _small_chunks(), embedder=embedder).start()
    ingest_path(rt, tree, project="proj")
    rt.stop()
    store = WorkspaceStore(data, WorkspaceName("default"), embedder)
    saved = dict(TREE_LANGUAGES)

    def broken() -> object:
        raise ImportError("the grammar's wheel is damaged")

    TREE_LANGUAGES["python"] = broken  # listed, but fails to load: the line chunker
    _LOCAL.__dict__.pop("parsers", None)
    try:
        store.sqlite.set_meta("text_format", "3")
        before = store.sqlite.source_records("proj", "pykka/_actor.py")
        assert any(r.symbol for r in before)
        writer = Writer(store, embedder, rechunk=Rechunk(target=300, overlap=0))
        while writer.reindex_step(limit=10):
            pass
        after = store.sqlite.source_records("proj", "pykka/_actor.py")
        assert [(r.id, r.symbol, r.line_start) for r in after] == [
            (r.id, r.symbol, r.line_start) for r in before
        ]
        assert store.sqlite.text_format() == TEXT_FORMAT
    finally:
        TREE_LANGUAGES.update(saved)
        _LOCAL.__dict__.pop("parsers", None)
        store.close()


def test_a_long_signature_is_shown_cut_so_the_body_stays_in_view() -> None:
    """A later piece's head over `HEAD_SHOWN` characters is shown cut at a line's end (one
    long line at the limit, with `…`), its elision line kept: ten such hits at 4,000
    characters each show body text (a whole 374-character signature filled each excerpt)."""
    params = ",\n".join(f"    argument_{i}: int = {i}" for i in range(14))
    head = f"def handle_request(\n{params},\n) -> Response:\n    ..."
    assert len(head) > HEAD_SHOWN
    cut = shown_head(head)
    assert len(cut) <= HEAD_SHOWN + len("\n    ...") and cut.endswith("\n    ...")
    assert cut.startswith("def handle_request(\n    argument_0: int = 0,")
    one_line = "def f(" + ", ".join(f"a{i}" for i in range(80)) + "):\n    ..."
    assert shown_head(one_line) == one_line[: HEAD_SHOWN - 1] + "…\n    ..."
    assert shown_head("def f(a):\n    ...") == "def f(a):\n    ..."
    body = "".join(f"    step_{i} = process(request, {i})\n" for i in range(40))
    hits = tuple(
        SearchHit(
            record=Record(
                id=MemoryId(f"{i:016x}"),
                content=body,
                source=f"svc{i}.py",
                chunk_index=3,
                chunk_count=4,
                symbol="handle_request",
                head=head,
            ),
            score=1.0 - i / 100,
        )
        for i in range(10)
    )
    shown = format_search(SearchRows(query="process", mode="lexical", hits=hits), 4000)
    assert shown.count("step_0 = process") == 10, shown
