"""Ignore-file rules (`.gitignore`, `.git/info/exclude`) matched in time linear in the name.

A folder's ignore file is not ours: pathspec turns `*a*a*a*a*a*a*a*a*a*a*a*a*b` into a
regular expression that Python's backtracking engine took 50 s to try on one 40-character
name (holding the interpreter lock the while: the daemon's other sessions, its SIGTERM
handler and `imprint stop` waited with it). So pathspec still says what each rule means
(its translation to a regular expression is the reference for gitignore's meaning, edge
cases included), and the expression, a small known subset, runs here on a Pike VM: every
instruction is visited at most once per character, so a check costs O(len(name) *
len(rule)) whatever the rule, and takes the same match Python's `re.search` would
(leftmost first), with the same directory-mark priority as `pathspec.GitIgnoreSpec`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from pathspec.patterns.gitignore import GitIgnorePatternError
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

__all__ = ["IgnoreRules", "compile_rule"]

_CHAR, _SPLIT, _JMP, _MARK, _END, _MATCH = range(6)

Op = tuple[int, object, int]  # (kind, predicate or target, second target)


def _not_slash(c: str) -> bool:
    return c != "/"


def _any(c: str) -> bool:
    return c != "\n"  # Python's "." (no DOTALL): pathspec's ".+" stops at a newline


def _is(char: str) -> Callable[[str], bool]:
    return lambda c: c == char


def _bracket(body: str, negated: bool) -> Callable[[str], bool]:
    """A bracket expression as Python's `re` reads pathspec's: `\\\\` a backslash, `a-z`
    a range, anything else itself (a negated one matches "/" too, as there)."""
    items: list[tuple[str, str]] = []
    chars: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            chars.append(body[i + 1])
            i += 2
        else:
            chars.append(body[i])
            i += 1
    j = 0
    while j < len(chars):
        if j + 2 < len(chars) and chars[j + 1] == "-":
            items.append((chars[j], chars[j + 2]))
            j += 3
        else:
            items.append((chars[j], chars[j]))
            j += 1

    def pred(c: str) -> bool:
        return any(lo <= c <= hi for lo, hi in items) != negated

    return pred


class _Unknown(ValueError):
    """pathspec wrote an expression outside the subset this engine runs."""


# Fixed pieces pathspec writes (spec.py), longest first, each as instructions relative to
# where it starts: (kind, arg, second arg) with targets as offsets.
_GROUPS = (
    "(?:(?P<ps_d>/)|$)",
    "(?P<ps_d>/)",
    "(?:.+/)?",
    "(?:/.+)?",
    "[^/]+",
    "[^/]*",
    "[^/]",
)


def _compile(regex: str) -> tuple[list[Op], bool, str]:
    """Instructions for one of pathspec's expressions, whether it is anchored (^), and the
    longest run of characters every match holds (a rule whose run is not in a path cannot
    match it: most checks end there, at the cost of `in`)."""
    prog: list[Op] = []
    anchored = regex.startswith("^")
    i = 1 if anchored else 0
    run, longest = "", ""

    def literal(char: str) -> None:
        nonlocal run, longest
        run += char
        longest = max(longest, run, key=len)
        emit(_CHAR, _is(char))

    def emit(kind: int, arg: object = None, other: int = 0) -> int:
        prog.append((kind, arg, other))
        return len(prog) - 1

    def patch(at: int, arg: object, other: int = 0) -> None:
        prog[at] = (prog[at][0], arg, other)

    while i < len(regex):
        piece = next((g for g in _GROUPS if regex.startswith(g, i)), None)
        if piece == "(?:(?P<ps_d>/)|$)":  # a folder's mark and what is under it, or the end
            split = emit(_SPLIT)
            emit(_MARK)
            emit(_CHAR, _is("/"))
            jump = emit(_JMP)
            end = emit(_END)
            patch(split, split + 1, end)
            patch(jump, len(prog))
        elif piece == "(?P<ps_d>/)":
            emit(_MARK)
            emit(_CHAR, _is("/"))
        elif piece in ("(?:.+/)?", "(?:/.+)?"):  # greedy: the longest first, as `re` tries
            split = emit(_SPLIT)
            if piece == "(?:/.+)?":
                emit(_CHAR, _is("/"))
            loop = emit(_CHAR, _any)
            more = emit(_SPLIT)
            if piece == "(?:.+/)?":
                emit(_CHAR, _is("/"))
            patch(more, loop, more + 1)
            patch(split, split + 1, len(prog))
        elif piece == "[^/]+":
            loop = emit(_CHAR, _not_slash)
            more = emit(_SPLIT)
            patch(more, loop, more + 1)
        elif piece == "[^/]*":
            split = emit(_SPLIT)
            emit(_CHAR, _not_slash)
            emit(_JMP, split)
            patch(split, split + 1, len(prog))
        elif piece == "[^/]":
            emit(_CHAR, _not_slash)
        if piece is not None:
            i += len(piece)
            run = ""
            continue
        char = regex[i]
        if char == "\\" and i + 1 < len(regex):
            literal(regex[i + 1])  # re.escape's escapes: the character itself
            i += 2
            continue
        if char not in "[.()|?*+^$":
            literal(char)
            i += 1
            continue
        run = ""
        if char == "[":
            j = i + 1
            negated = regex.startswith("^", j)
            j += 1 if negated else 0
            start = j
            j += 1 if regex.startswith("]", j) else 0  # a "]" first is itself
            while j < len(regex) and regex[j] != "]":
                j += 2 if regex[j] == "\\" else 1
            if j >= len(regex):
                raise _Unknown(regex)
            emit(_CHAR, _bracket(regex[start:j], negated))
            i = j + 1
        elif char == "." and regex == ".":  # pathspec's "every path" (`*`, `**`)
            emit(_CHAR, _any)
            i += 1
        else:
            raise _Unknown(regex)
    emit(_MATCH)
    return prog, anchored, longest


class _Rule(NamedTuple):
    include: bool  # True: the rule ignores what it matches; False: a `!` rule keeps it
    prog: list[Op]
    anchored: bool
    required: str  # in every path the rule matches

    def search(self, path: str) -> bool | None:
        """None when the rule does not match `path`; else whether the match `re.search`
        would take ends on a folder's mark (the rule matched a folder above `path`)."""
        if self.required not in path:
            return None
        prog, n = self.prog, len(path)
        threads: list[tuple[int, bool]] = []
        self._add(threads, set(), 0, False, 0, n)
        found: bool | None = None
        for pos in range(n + 1):
            following: list[tuple[int, bool]] = []
            seen: set[int] = set()
            char = path[pos] if pos < n else ""
            for pc, mark in threads:  # in priority order: the first to match wins
                kind, arg, _ = prog[pc]
                if kind == _MATCH:
                    found = mark
                    break  # the threads after it have a lower priority
                if pos < n and arg(char):  # type: ignore[operator]
                    self._add(following, seen, pc + 1, mark, pos + 1, n)
            if pos == n:
                break
            if found is None and not self.anchored:
                self._add(following, seen, 0, False, pos + 1, n)  # `search`: start here too
            threads = following
            if not threads:
                break
        return found

    def _add(
        self,
        threads: list[tuple[int, bool]],
        seen: set[int],
        pc: int,
        mark: bool,
        pos: int,
        n: int,
    ) -> None:
        """Follow the jumps from `pc` depth first, the preferred branch first; each
        instruction once per position (a later, lower-priority arrival changes nothing)."""
        stack = [(pc, mark)]
        while stack:
            pc, mark = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            kind, arg, other = self.prog[pc]
            if kind == _JMP:
                stack.append((arg, mark))  # type: ignore[arg-type]
            elif kind == _SPLIT:
                stack.append((other, mark))
                stack.append((arg, mark))  # type: ignore[arg-type]
            elif kind == _MARK:
                stack.append((pc + 1, True))
            elif kind == _END:
                if pos == n:
                    stack.append((pc + 1, mark))
            else:
                threads.append((pc, mark))


def compile_rule(line: str) -> _Rule | None:
    """One ignore-file line as a rule; None for a blank line, a comment, a pattern git
    discards (a bad range) or one pathspec refuses."""
    try:
        regex, include = GitIgnoreSpecPattern.pattern_to_regex(line)
    except GitIgnorePatternError:
        return None
    if regex is None or include is None:
        return None
    try:
        prog, anchored, required = _compile(regex)
    except _Unknown:
        return None  # not reached with the pathspec the lock file pins (a test holds it)
    return _Rule(include, prog, anchored, required)


class IgnoreRules:
    """The rules of one ignore file, checked as `pathspec.GitIgnoreSpec.check_file` does."""

    def __init__(self, rules: list[_Rule]) -> None:
        self._rules = rules

    @classmethod
    def from_lines(cls, lines: Iterable[str]) -> IgnoreRules:
        return cls([rule for line in lines if (rule := compile_rule(line)) is not None])

    def __bool__(self) -> bool:
        return bool(self._rules)

    def check(self, path: str) -> bool | None:
        """True when the rules ignore `path` (relative, "/"-separated; a folder ends in
        "/"), False when a `!` rule keeps it, None when no rule matches it.

        The last rule that matches decides, except that a rule matching `path` itself
        outranks one matching only a folder above it (GitIgnoreSpec's priorities)."""
        if path.startswith("/"):
            path = path[1:]
        elif path.startswith("./"):
            path = path[2:]
        decided: bool | None = None
        rank = 0
        for rule in reversed(self._rules):
            mark = rule.search(path)
            if mark is None:
                continue
            priority = 1 if mark else 2
            if priority > rank:
                decided, rank = rule.include, priority
            if priority == 2:
                break
        return decided
