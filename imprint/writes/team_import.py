"""A local export moved into a team workspace (`imprint import FILE --database URL
--workspace user:<sub>`): the file checked whole first (`read_export`, as a local import
checks it), then written to the team store behind the storage seam in batches, each one
transaction, with the same records a local import would make (`memory_record`,
`source_records`), then the supersede links, then the facts. Ids are kept, so importing the
same file again rewrites the same rows and changes nothing."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from imprint.errors import InputError
from imprint.store.records import Fact, Record, WriteBatch
from imprint.store.seam import MemoryStore
from imprint.writes._redaction import redacted_batch
from imprint.writes.import_check import ExportFile
from imprint.writes.imports import memory_record, source_records

__all__ = ["TEAM_WORKSPACE", "TeamImport", "check_team_workspace", "import_into"]

# `user:<sub>` or `team:<name>`: a subject or team name as an issuer writes it (printable,
# no spaces), bounded.
TEAM_WORKSPACE = re.compile(r"^(user|team):[!-~]{1,200}$")
BATCH = 500


def check_team_workspace(name: str) -> str:
    if not TEAM_WORKSPACE.match(name):
        raise InputError(
            f"--workspace: {name!r} is not a team workspace; give user:<sub> or team:<name>"
        )
    return name


@dataclass
class TeamImport:
    records: int = 0
    links: int = 0
    facts: int = 0

    def line(self, workspace: str) -> str:
        return (
            f"imported into {workspace}: {self.records} records, {self.links} supersede "
            f"links, {self.facts} facts"
        )


def import_into(
    export: ExportFile,
    store: MemoryStore,
    *,
    actor: str = "",
    progress: Callable[[int], None] = lambda n: None,
    redact: bool = True,
) -> TeamImport:
    """Every workspace of the export into `store`'s one workspace; with `redact` (the
    `redact` settings' answer for it), its secrets redacted as every local write's are (the
    team store is written behind the seam, past the local write gateway)."""
    report = TeamImport()

    def write(batch: WriteBatch) -> None:
        store.write(redacted_batch(batch)[0] if redact else batch, actor=actor)

    for lines in export.workspaces.values():
        pending: list[Record] = [memory_record(m) for m in lines.memories]
        batches: list[WriteBatch] = []
        for start in range(0, len(pending), BATCH):
            batches.append(WriteBatch(upserts=tuple(pending[start : start + BATCH])))
        for source in lines.sources:
            entry, records = source_records(source)
            batches.append(WriteBatch(upserts=tuple(records), set_sources=(entry,)))
        for batch in batches:
            write(batch)
            report.records += len(batch.upserts)
            progress(len(batch.upserts))
        # Links after the records they join, so a link never names a memory not yet there.
        links = lines.links()
        for start in range(0, len(links), BATCH):
            write(WriteBatch(supersede=tuple(links[start : start + BATCH])))
        report.links += len(links)
        facts = [Fact(**f.model_dump(exclude={"line", "workspace"})) for f in lines.facts]
        for start in range(0, len(facts), BATCH):
            write(WriteBatch(add_facts=tuple(facts[start : start + BATCH])))
        report.facts += len(facts)
    return report
