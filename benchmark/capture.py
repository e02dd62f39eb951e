"""Capture benchmark: what Imprint keeps from labelled sessions, and what a later session is
told and finds.

`benchmark/capture_data/sessions.txt` holds hand-written sessions of several projects (their
format is described at its top), each rendered here into one client's transcript format
(Claude Code, Codex, Gemini CLI) and captured in date order through `capture_event`, as the
daemon's worker does. Then, per project:

- extraction: each labelled observation (decision, fix, preference, fact, open problem) is
  found when a captured observation memory of its type, from its session, holds its phrase;
  an observation holding no label of its type is a false positive (precision, recall);
- reversals: a supersede link between the two labelled items is a hit; any other link
  between observations is a false positive;
- briefing: a new session's briefing (`hooks.context_chars`, default 2,000): how many of the
  items that hold now (labelled decisions, preferences, facts not reversed) it holds, and how
  many replaced ones it shows outside its last sessions;
- search: each question's answer phrase in the first hit, in the first 3, replaced phrases
  above it, and the characters a search answer takes.

`--real DIR` also captures the real Claude Code sessions in DIR (`../shared/sessions/` when
present) and asks the questions of `capture_data/real_questions.txt`. `--split tune|held|all`
picks the sessions scored. Run it on today's capture with PYTHONPATH at an older checkout
to get the "before" figures: it uses only what both have.

    PYTHONPATH=$PWD python -m benchmark.capture --publish
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmark._common import (
    PUBLISHED,
    REPO,
    Run,
    conclude,
    data_dir,
    imprint_revision,
    machine,
    note,
    utc_now,
)

DATA = Path(__file__).with_name("capture_data")
SESSIONS = DATA / "sessions.txt"
REAL_QUESTIONS = DATA / "real_questions.txt"
# In a questions file, the questions after this line are held out (scored apart too).
HELD_MARK = "# --- held out"
SHOW_BRIEFING = [""]
KINDS = ("decision", "fix", "preference", "fact", "open")


@dataclass
class Session:
    sid: str
    project: str
    client: str
    at: float
    split: str
    lines: list[tuple[str, str]] = field(default_factory=list)  # (tag, text)
    labels: list[tuple[str, str]] = field(default_factory=list)  # (kind, phrase)
    groups: list[int] = field(default_factory=list)  # each label's item (restatements share)
    reversals: list[tuple[str, str]] = field(default_factory=list)  # (old, new)


@dataclass
class Question:
    project: str
    text: str
    gold: str
    stale: tuple[str, ...] = ()


def norm(text: str) -> str:
    return " ".join(re.sub(r"[`*_]", "", text).lower().split())


def parse(path: Path) -> tuple[list[Session], list[Question]]:
    sessions: list[Session] = []
    questions: list[Question] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("=== "):
            parts = line[4:].split()
            opts = dict(p.split("=", 1) for p in parts[1:])
            when = datetime.fromisoformat(opts["at"].replace("Z", "+00:00")).timestamp()
            sessions.append(Session(parts[0], opts["project"], opts["client"], when, opts["split"]))
        elif line.startswith("?? "):
            head, _, gold = line[3:].rpartition(" => ")
            project, _, text = head.partition(" | ")
            questions.append(Question(project.strip(), text.strip(), norm(gold)))
        elif line.startswith("@reverses "):
            old, _, new = line[len("@reverses ") :].partition(" => ")
            sessions[-1].reversals.append((norm(old), norm(new)))
        elif line.startswith("@"):
            kind, _, phrase = line[1:].partition(" ")
            again = kind.endswith("+")
            current = sessions[-1]
            group = current.groups[-1] if again and current.groups else len(current.groups)
            current.labels.append((kind.rstrip("+"), norm(phrase)))
            current.groups.append(group)
        else:
            tag, _, text = line.partition(" ")
            sessions[-1].lines.append((tag.rstrip(":"), text.replace("\\n", "\n")))
    return sessions, questions


# --- transcripts in each client's format ---------------------------------------------------


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _steps(s: Session) -> list[tuple[str, Any]]:
    """(kind, payload) in order: prompt, text, call (name, input, output, failed)."""
    out: list[tuple[str, Any]] = []
    for tag, text in s.lines:
        if tag == "U":
            out.append(("prompt", text))
        elif tag == "A":
            out.append(("text", text))
        elif tag in ("$", "$!"):
            cmd, _, output = text.partition(" => ")
            out.append(("call", ("Bash", {"command": cmd}, output, tag == "$!")))
        elif tag == "E":
            out.append(("call", ("Edit", {"file_path": text}, "ok", False)))
        elif tag == "T":
            name, _, output = text.partition(" => ")
            out.append(("call", (name, {"query": "q"}, output, False)))
    return out


def render(s: Session, folder: Path, cwd: Path) -> Path:
    steps = _steps(s)
    lines: list[dict[str, Any]] = []
    t = s.at
    if s.client == "claude":
        for n, (kind, payload) in enumerate(steps):
            t += 20
            base = {
                "sessionId": s.sid,
                "cwd": str(cwd),
                "uuid": f"{s.sid}-{n}",
                "timestamp": _iso(t),
                "isSidechain": False,
                "userType": "external",
            }
            if kind == "prompt":
                lines.append(
                    {**base, "type": "user", "message": {"role": "user", "content": payload}}
                )
            elif kind == "text":
                lines.append(
                    {
                        **base,
                        "type": "assistant",
                        "message": {
                            "role": "assistant",
                            "content": [{"type": "text", "text": payload}],
                        },
                    }
                )
            else:
                name, args, output, failed = payload
                tid = f"toolu_{n}"
                lines.append(
                    {
                        **base,
                        "type": "assistant",
                        "message": {
                            "role": "assistant",
                            "content": [
                                {"type": "tool_use", "id": tid, "name": name, "input": args}
                            ],
                        },
                    }
                )
                result: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": tid,
                    "content": output,
                }
                if failed:
                    result["is_error"] = True
                lines.append(
                    {
                        **base,
                        "uuid": f"{s.sid}-{n}r",
                        "type": "user",
                        "message": {"role": "user", "content": [result]},
                    }
                )
        path = folder / f"{s.sid}.jsonl"
    elif s.client == "codex":
        lines.append(
            {
                "timestamp": _iso(t),
                "type": "session_meta",
                "payload": {"id": s.sid, "cwd": str(cwd)},
            }
        )
        for n, (kind, payload) in enumerate(steps):
            t += 20
            ts = _iso(t)
            if kind == "prompt":
                lines.append(
                    {
                        "timestamp": ts,
                        "type": "response_item",
                        "payload": {
                            "type": "message",
                            "role": "user",
                            "content": [{"type": "input_text", "text": payload}],
                        },
                    }
                )
            elif kind == "text":
                lines.append(
                    {
                        "timestamp": ts,
                        "type": "response_item",
                        "payload": {
                            "type": "message",
                            "role": "assistant",
                            "content": [{"type": "output_text", "text": payload}],
                        },
                    }
                )
            else:
                name, args, output, failed = payload
                call = f"call_{n}"
                if name == "Bash":
                    name, args = "exec_command", {"cmd": args["command"]}
                    code = 1 if failed else 0
                    output = (
                        "Chunk ID: x\nWall time: 0.1 seconds\n"
                        f"Process exited with code {code}\nOutput:\n{output}"
                    )
                elif name == "Edit":
                    name = "apply_patch"
                    args = {
                        "input": "*** Begin Patch\n"
                        f"*** Update File: {args['file_path']}\n*** End Patch"
                    }
                    lines.append(
                        {
                            "timestamp": ts,
                            "type": "response_item",
                            "payload": {
                                "type": "custom_tool_call",
                                "name": name,
                                "call_id": call,
                                "input": args["input"],
                            },
                        }
                    )
                    lines.append(
                        {
                            "timestamp": ts,
                            "type": "response_item",
                            "payload": {
                                "type": "custom_tool_call_output",
                                "call_id": call,
                                "output": output,
                            },
                        }
                    )
                    continue
                lines.append(
                    {
                        "timestamp": ts,
                        "type": "response_item",
                        "payload": {
                            "type": "function_call",
                            "name": name,
                            "call_id": call,
                            "arguments": json.dumps(args),
                        },
                    }
                )
                lines.append(
                    {
                        "timestamp": ts,
                        "type": "response_item",
                        "payload": {
                            "type": "function_call_output",
                            "call_id": call,
                            "output": output,
                        },
                    }
                )
        path = folder / f"rollout-{s.sid}.jsonl"
    else:
        lines.append({"sessionId": s.sid, "startTime": _iso(t), "kind": "main"})
        current: dict[str, Any] | None = None
        for n, (kind, payload) in enumerate(steps):
            t += 20
            if kind == "prompt":
                current = None
                lines.append(
                    {
                        "id": f"{s.sid}-{n}",
                        "timestamp": _iso(t),
                        "type": "user",
                        "content": [{"text": payload}],
                    }
                )
                continue
            if current is None or kind == "text":
                current = {
                    "id": f"{s.sid}-{n}",
                    "timestamp": _iso(t),
                    "type": "gemini",
                    "content": "",
                    "toolCalls": [],
                }
            if kind == "text":
                current["content"] = payload
            else:
                name, args, output, failed = payload
                if name == "Bash":
                    name, args = "run_shell_command", {"command": args["command"]}
                    output = f"Output: {output}" + ("\nExit Code: 1" if failed else "")
                elif name == "Edit":
                    name = "replace"
                current["toolCalls"] = [
                    *current["toolCalls"],
                    {
                        "id": f"c{n}",
                        "name": name,
                        "args": args,
                        "status": "success",
                        "result": [
                            {
                                "functionResponse": {
                                    "id": f"c{n}",
                                    "name": name,
                                    "response": {"output": output},
                                }
                            }
                        ],
                    },
                ]
            lines.append(json.loads(json.dumps(current)))
        path = folder / f"session-{s.sid}.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(o) + "\n" for o in lines), encoding="utf-8")
    return path


# --- measuring --------------------------------------------------------------------------


def _kind_of(record: Any) -> str:
    if record.kind == "open-problem":
        return "open"
    return {
        "decision": "decision",
        "bug": "fix",
        "preference": "preference",
        "finding": "fact",
    }.get(record.type, "")


def _session_of(record: Any) -> set[str]:
    found = set(re.findall(r"session:([A-Za-z0-9._-]+?)#", f"{record.source} {record.context}"))
    return found


@dataclass
class Result(Run):
    split: str = "all"
    sessions: int = 0
    labelled: dict[str, int] = field(default_factory=dict)
    reversals_labelled: int = 0
    extraction: dict[str, dict[str, float]] = field(default_factory=dict)
    reversals: dict[str, float] = field(default_factory=dict)
    briefing: dict[str, Any] = field(default_factory=dict)
    search: dict[str, Any] = field(default_factory=dict)
    real: dict[str, Any] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)


def _pr(tp: int, fp: int, found: int, total: int) -> dict[str, float]:
    return {
        "precision": round(tp / (tp + fp), 3) if tp + fp else 0.0,
        "recall": round(found / total, 3) if total else 0.0,
        "extracted": tp + fp,
        "labelled": total,
    }


def _ask_search(runtime: Any, project: str, query: str) -> tuple[list[str], str]:
    from imprint.reads.gateway import ActorReads
    from imprint.reads.search import SearchArgs, format_search, search

    reads = ActorReads(runtime)
    rows = search(reads, SearchArgs(query=query, project=project))
    return [norm(h.record.content) for h in rows.hits], format_search(rows, 4000)


def _search_scores(
    runtime: Any, questions: Sequence[Question], res_misses: list[str]
) -> dict[str, Any]:
    first = top3 = top5 = stale_above = 0
    chars: list[int] = []
    per: list[dict[str, Any]] = []
    for q in questions:
        hits, text = _ask_search(runtime, q.project, q.text)
        chars.append(len(text))
        rank = next((i for i, h in enumerate(hits) if q.gold in h), None)
        stale_rank = next(
            (i for i, h in enumerate(hits) if any(s in h and q.gold not in h for s in q.stale)),
            None,
        )
        first += rank == 0
        top3 += rank is not None and rank < 3
        top5 += rank is not None and rank < 5
        if stale_rank is not None and (rank is None or stale_rank < rank):
            stale_above += 1
        per.append({"question": q.text, "rank": rank, "stale_rank": stale_rank})
        if rank != 0:
            res_misses.append(f"search {q.project}: {q.text!r} gold at {rank}")
    n = max(len(questions), 1)
    return {
        "questions": len(questions),
        "gold_first": first,
        "gold_top3": top3,
        "gold_top5": top5,
        "stale_above_gold": stale_above,
        "gold_first_rate": round(first / n, 3),
        "chars_per_search": round(sum(chars) / n),
        "per_question": per,
    }


def measure(
    res: Result, sessions: list[Session], questions: list[Question], real: Path | None
) -> None:
    from imprint.actors.lifecycle import running
    from imprint.actors.read_messages import Newest, SupersedeLinks
    from imprint.capture.session import capture_event
    from imprint.config import load_config
    from imprint.reads.briefing import briefing_text
    from imprint.reads.deadline import Deadline
    from imprint.reads.gateway import ActorReads
    from imprint.writes.gateway import Writes

    scored = [s for s in sessions if res.split in ("all", s.split)]
    projects = sorted({s.project for s in scored})
    res.sessions = len(scored)
    with data_dir(None, "imprint-capture-bench-") as root:
        work = root / "work"
        with running(root, load_config(root)) as runtime:
            writes = Writes(runtime)
            started = time.perf_counter()
            for s in sorted(sessions, key=lambda s: s.at):
                cwd = work / s.project
                cwd.mkdir(parents=True, exist_ok=True)
                path = render(s, root / "transcripts" / s.client, cwd)
                client = {"claude": "claude-code"}.get(s.client, s.client)
                event = {
                    "session_id": s.sid,
                    "transcript_path": str(path),
                    "cwd": str(cwd),
                    "client": client,
                    "hook_event_name": "Stop",
                }
                capture_event(writes, root, event)
            res.config["capture_sec"] = round(time.perf_counter() - started, 1)
            reads = ActorReads(runtime)
            ws = reads.open("")
            by_project: dict[str, list[Any]] = {}
            for project in projects:
                found = Deadline(60).wait(
                    reads.ask(
                        Newest(
                            workspace=ws,
                            project=project,
                            kinds=("observation", "open-problem"),
                            limit=5000,
                        )
                    ),
                    "bench",
                )
                by_project[project] = found
            everything = [r for rs in by_project.values() for r in rs]
            links = (
                Deadline(60).wait(
                    reads.ask(SupersedeLinks(workspace=ws, ids=tuple(r.id for r in everything))),
                    "bench",
                )
                if everything
                else []
            )
            _score_extraction(res, scored, everything)
            _score_reversals(res, scored, everything, links)
            _score_briefing(res, scored, projects, reads, ws, briefing_text, Deadline)
            qs = [q for q in questions if q.project in projects]
            stale_by_project: dict[str, list[str]] = defaultdict(list)
            for s in sessions:
                for old, _ in s.reversals:
                    stale_by_project[s.project].append(old)
            for q in qs:
                q.stale = tuple(stale_by_project[q.project])
            res.search = _search_scores(runtime, qs, res.misses)
        if real is not None and real.is_dir():
            _measure_real(res, real, root)


def _score_extraction(res: Result, sessions: list[Session], records: list[Any]) -> None:
    by_sid = {s.sid: s for s in sessions}
    counts: dict[str, list[int]] = {k: [0, 0, 0, 0] for k in KINDS}  # tp, fp, found, total
    for r in records:
        kind = _kind_of(r)
        sids = _session_of(r) & set(by_sid)
        if not sids or kind not in counts:
            continue
        text = norm(r.content)
        hit = any(k == kind and p in text for sid in sids for k, p in by_sid[sid].labels)
        counts[kind][0 if hit else 1] += 1
        if not hit:
            res.misses.append(f"extra {kind} {sorted(sids)}: {r.content[:140]}")
    for s in sessions:
        mine = [r for r in records if s.sid in _session_of(r)]
        for group in sorted(set(s.groups)):
            items = [lab for lab, g in zip(s.labels, s.groups, strict=True) if g == group]
            kind = items[0][0]
            counts[kind][3] += 1
            if any(_kind_of(r) == k and p in norm(r.content) for r in mine for k, p in items):
                counts[kind][2] += 1
            else:
                res.misses.append(f"missed {kind} {s.sid}: {items[0][1]}")
    res.labelled = {k: v[3] for k, v in counts.items()}
    res.extraction = {k: _pr(*v) for k, v in counts.items()}


def _score_reversals(
    res: Result, sessions: list[Session], records: list[Any], links: list[Any]
) -> None:
    """A labelled reversal is found by a link from a memory holding its old phrase to an
    observation of the new item's session and type (a session often states one choice twice,
    the user's words and the assistant's: either may carry the link)."""
    by_id = {r.id: r for r in records}
    gold = []
    for s in sessions:
        kinds = dict((p, k) for k, p in s.labels)
        for old, new in s.reversals:
            gold.append((s.project, old, s.sid, kinds.get(new, "")))
    res.reversals_labelled = len(gold)

    def fits(link: Any, g: tuple[str, str, str, str]) -> bool:
        o, n = by_id.get(link.old), by_id.get(link.new)
        project, old, sid, kind = g
        return (
            o is not None
            and n is not None
            and o.project == project
            and old in norm(o.content)
            and sid in _session_of(n)
            and _kind_of(n) == kind
        )

    found = 0
    olds = sorted({(g[0], g[1]) for g in gold})
    res.reversals_labelled = len(olds)
    for project, old in olds:
        ok = any(fits(link, g) for link in links for g in gold if g[:2] == (project, old))
        found += ok
        if not ok:
            res.misses.append(f"missed reversal {project}: {old}")
    tp = fp = 0
    projects = {s.project for s in sessions}
    for link in links:
        o, n = by_id.get(link.old), by_id.get(link.new)
        if o is None or n is None or o.kind == "open-problem" or o.project not in projects:
            continue
        ok = any(fits(link, g) for g in gold)
        tp += ok
        fp += not ok
        if not ok:
            res.misses.append(f"wrong supersede: {o.content[:90]!r} by {n.content[:90]!r}")
    res.reversals = {
        "precision": round(tp / (tp + fp), 3) if tp + fp else 0.0,
        "recall": round(found / len(olds), 3) if olds else 0.0,
        "links": tp + fp,
        "labelled": len(olds),
    }


def _score_briefing(
    res: Result,
    sessions: list[Session],
    projects: list[str],
    reads: Any,
    ws: Any,
    briefing_text: Any,
    deadline_cls: Any,
) -> None:
    replaced = {(s.project, old) for s in sessions for old, _ in s.reversals}
    holds: list[tuple[str, list[str]]] = []
    for s in sessions:
        for group in sorted(set(s.groups)):
            items = [lab for lab, g in zip(s.labels, s.groups, strict=True) if g == group]
            if items[0][0] not in ("decision", "preference", "fact"):
                continue
            if any(
                (s.project, p) in replaced
                or any(o in p or p in o for pr, o in replaced if pr == s.project)
                for _, p in items
            ):
                continue
            holds.append((s.project, [p for _, p in items]))
    out: dict[str, Any] = {}
    for chars in (2000, 4000):
        current = stale = 0
        texts = {}
        for project in projects:
            raw = briefing_text(reads, ws, project, chars, deadline_cls(30))
            if SHOW_BRIEFING[0] in (project, "*") and chars == 2000:
                print(raw, file=sys.stderr)
            text = norm(raw)
            texts[project] = text
        for project, phrases in holds:
            text = texts[project]
            # Lines clip: the phrase's first 40 characters are enough to name the item.
            current += any(p[:40] in text for p in phrases)
        for project, phrase in replaced:
            head = texts[project].split("last sessions:")[0]
            stale += phrase[:40] in head
        out[str(chars)] = {
            "holds_now": len(holds),
            "shown": current,
            "shown_rate": round(current / len(holds), 3) if holds else 0.0,
            "replaced": len(replaced),
            "replaced_shown_as_current": stale,
        }
    res.briefing = out


def _held_out(path: Path) -> int:
    """How many of the last questions in `path` are held out: those after its HELD_MARK line."""
    text = path.read_text(encoding="utf-8")
    if HELD_MARK not in text:
        return 0
    return sum(1 for line in text.split(HELD_MARK, 1)[1].splitlines() if line.startswith("?? "))


def _measure_real(res: Result, folder: Path, root: Path) -> None:
    """Capture the real sessions in `folder` (Claude Code's format) into a store of their
    own and ask the questions of REAL_QUESTIONS."""
    from imprint.actors.lifecycle import running
    from imprint.capture.session import capture_event
    from imprint.config import load_config
    from imprint.writes.gateway import Writes

    if not REAL_QUESTIONS.exists():
        return
    _, questions = parse(REAL_QUESTIONS)
    held = _held_out(REAL_QUESTIONS)
    store = root / "real"
    store.mkdir()
    with running(store, load_config(store)) as runtime:
        writes = Writes(runtime)
        for path in sorted(folder.glob("*.jsonl")):
            first = json.loads(path.open(encoding="utf-8").readline())
            sid = str(first.get("sessionId") or uuid.uuid5(uuid.NAMESPACE_URL, path.name))
            cwd = str(first.get("cwd") or "/tmp/unknown")
            event = {
                "session_id": sid,
                "transcript_path": str(path),
                "cwd": cwd,
                "client": "claude-code",
                "hook_event_name": "Stop",
            }
            capture_event(writes, store, event)
        misses: list[str] = []
        res.real = _search_scores(runtime, questions, misses)
        res.real["sessions"] = len(list(folder.glob("*.jsonl")))
        if held:
            res.real["held"] = _search_scores(runtime, questions[-held:], [])
            res.real["held"].pop("per_question")
        res.real["misses"] = misses


def table(res: Result) -> str:
    lines = [
        f"capture benchmark, split {res.split}: {res.sessions} sessions",
        "",
        "| type | labelled | extracted | precision | recall |",
        "|---|---|---|---|---|",
    ]
    for kind, row in res.extraction.items():
        lines.append(
            f"| {kind} | {row['labelled']} | {row['extracted']} | {row['precision']} "
            f"| {row['recall']} |"
        )
    rv = res.reversals
    lines += [
        "",
        f"reversals: {rv.get('labelled')} labelled, {rv.get('links')} links, "
        f"precision {rv.get('precision')}, recall {rv.get('recall')}",
    ]
    for chars, b in res.briefing.items():
        lines.append(
            f"briefing at {chars} chars: {b['shown']} of {b['holds_now']} items that hold now "
            f"({b['shown_rate']}), {b['replaced_shown_as_current']} of {b['replaced']} "
            "replaced shown as current"
        )
    scored = (("labelled", res.search), ("real", res.real), ("real held", res.real.get("held")))
    for name, s in scored:
        if s:
            lines.append(
                f"search ({name}): {s['questions']} questions, gold first {s['gold_first']}, "
                f"top 3 {s['gold_top3']}, top 5 {s['gold_top5']}, replaced above gold "
                f"{s['stale_above_gold']}, {s['chars_per_search']} chars per search"
            )
    return "\n".join(lines)


def readme(res: Result, command: str) -> str:
    return "\n".join(
        [
            "# Capture benchmark run",
            "",
            f"- Command: `{command}`",
            f"- Started: {res.started_at}; revision "
            f"{res.config.get('revision', {}).get('commit', '?')}",
            f"- Split: {res.split}; sessions scored: {res.sessions}; labelled observations "
            f"{sum(res.labelled.values())}, reversals {res.reversals_labelled}",
            "",
            "```",
            table(res),
            "```",
            "",
            "Misses and false positives are listed in results.json (`misses`).",
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmark.capture", description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=("tune", "held", "all"), default="all")
    shared = [p / "shared" / "sessions" for p in (REPO.parent, REPO.parent.parent)]
    parser.add_argument("--real", type=Path, default=next((p for p in shared if p.is_dir()), None))
    parser.add_argument("--no-real", action="store_true")
    parser.add_argument("--only-real", action="store_true", help="the real sessions alone")
    parser.add_argument("--label", default="after", help="names the run: before or after")
    parser.add_argument("--publish", action="store_true")
    parser.add_argument("--misses", action="store_true", help="list misses on stderr")
    parser.add_argument("--show-briefing", default="", help="print a project's briefing (* all)")
    parser.add_argument("--out", type=Path, default=PUBLISHED)
    args = parser.parse_args(argv)
    SHOW_BRIEFING[0] = args.show_briefing
    sessions, questions = ([], []) if args.only_real else parse(SESSIONS)
    res = Result(
        started_at=utc_now(),
        command=list(sys.argv),
        machine=machine(["chromadb", "onnxruntime"]),
        config={"label": args.label, "revision": imprint_revision()},
        split=args.split,
    )
    note(f"capture benchmark: {len(sessions)} sessions, split {args.split}")
    measure(res, sessions, questions, None if args.no_real else args.real)
    if args.misses:
        print("\n".join(res.misses), file=sys.stderr)
    conclude(res, table, readme if args.publish else None, args.out, f"capture-{args.label}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
