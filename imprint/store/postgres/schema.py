"""The team store's schema: versioned migrations, each applied once, in one transaction.

`migrate` takes a transaction-scoped advisory lock first, so several servers starting on one
database at once apply each step exactly once; running it again changes nothing. Every table
is keyed by workspace (`user:<sub>`, `team:<name>`): one database holds every workspace.
"""

from __future__ import annotations

import psycopg

__all__ = ["DIMENSIONS", "MIGRATIONS", "SCHEMA_VERSION", "migrate", "schema_version"]

# The embedder's width (imprint.store.embedder: MiniLM class, 384-d).
DIMENSIONS = 384
# Any constant the other users of a database are unlikely to pick: pg_advisory_xact_lock's key.
_MIGRATION_LOCK = 0x1D9B_7E47

MIGRATIONS: tuple[tuple[int, str], ...] = (
    (
        1,
        f"""
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE imprint_meta (key text PRIMARY KEY, value text NOT NULL);
-- The whole record as the local store's Record model dumps it (so a field added there needs no
-- migration here), beside the columns that filters, ranking and the source registry read.
CREATE TABLE records (
    workspace text NOT NULL,
    id text NOT NULL,
    record jsonb NOT NULL,
    project text NOT NULL,
    source text NOT NULL,
    source_type text NOT NULL,
    chunk_index integer NOT NULL,
    type text NOT NULL,
    lang text NOT NULL,
    layer text NOT NULL,
    source_mtime double precision NOT NULL,
    created_at double precision NOT NULL,
    text_key text,
    lexical tsvector NOT NULL,
    embedding vector({DIMENSIONS}) NOT NULL,
    written_by text NOT NULL,
    written_at double precision NOT NULL,
    PRIMARY KEY (workspace, id)
);
CREATE INDEX records_source ON records (workspace, project, source, chunk_index);
CREATE INDEX records_text_key ON records (workspace, project, text_key)
    WHERE text_key IS NOT NULL;
CREATE INDEX records_lexical ON records USING gin (lexical);
CREATE INDEX records_embedding ON records USING hnsw (embedding vector_cosine_ops);
CREATE TABLE sources (
    workspace text NOT NULL,
    project text NOT NULL,
    source text NOT NULL,
    source_type text NOT NULL,
    mtime double precision NOT NULL,
    sha text NOT NULL,
    chunk_count integer NOT NULL,
    root text NOT NULL,
    validators text NOT NULL,
    ingested_at double precision NOT NULL,
    PRIMARY KEY (workspace, project, source)
);
CREATE TABLE facts (
    workspace text NOT NULL,
    id text NOT NULL,
    subject text NOT NULL,
    predicate text NOT NULL,
    object text NOT NULL,
    valid_from double precision NOT NULL,
    ended double precision,
    source text NOT NULL,
    written_by text NOT NULL,
    PRIMARY KEY (workspace, id)
);
CREATE INDEX facts_subject ON facts (workspace, lower(subject), lower(predicate));
CREATE TABLE supersedes (
    workspace text NOT NULL,
    old_id text NOT NULL,
    new_id text NOT NULL,
    at double precision NOT NULL,
    PRIMARY KEY (workspace, old_id, new_id)
);
CREATE INDEX supersedes_new ON supersedes (workspace, new_id);
CREATE TABLE tombstones (
    workspace text NOT NULL,
    key text NOT NULL,
    at double precision NOT NULL,
    PRIMARY KEY (workspace, key)
);
-- Who wrote what: one row per acknowledged write, in the write's own transaction.
CREATE TABLE audit (
    seq bigserial PRIMARY KEY,
    workspace text NOT NULL,
    actor text NOT NULL,
    at double precision NOT NULL,
    upserts text[] NOT NULL,
    deletes text[] NOT NULL,
    facts_added integer NOT NULL,
    facts_ended integer NOT NULL
);
CREATE INDEX audit_workspace ON audit (workspace, seq);
""",
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]


def schema_version(conn: psycopg.Connection) -> int:
    """The version a database is at: 0 before the first migration."""
    exists = conn.execute("SELECT to_regclass('imprint_meta') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return 0
    row = conn.execute("SELECT value FROM imprint_meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def migrate(conn: psycopg.Connection) -> tuple[int, int]:
    """Bring the database up to SCHEMA_VERSION; returns (version before, version now)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        before = schema_version(conn)
        if before > SCHEMA_VERSION:
            raise psycopg.errors.FeatureNotSupported(
                f"database schema is version {before}; this Imprint knows up to "
                f"{SCHEMA_VERSION}: upgrade Imprint"
            )
        for version, sql in MIGRATIONS:
            if version > before:
                conn.execute(sql.encode())
                conn.execute(
                    "INSERT INTO imprint_meta VALUES ('schema_version', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (str(version),),
                )
    return before, SCHEMA_VERSION
