"""The team store on PostgreSQL with pgvector: schema migrations, the store, a local server."""

from imprint.store.postgres.local import LocalPostgres
from imprint.store.postgres.schema import SCHEMA_VERSION, migrate, schema_version
from imprint.store.postgres.store import PostgresStore, open_pool

__all__ = [
    "SCHEMA_VERSION",
    "LocalPostgres",
    "PostgresStore",
    "migrate",
    "open_pool",
    "schema_version",
]
