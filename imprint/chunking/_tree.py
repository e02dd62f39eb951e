"""Code chunks that follow the code's structure, from a tree-sitter parse.

A chunk is a definition: a function, a method, or a class (struct, impl, interface ...)
header with its fields. A definition over the target is split at its inner definitions (the
header, then each inner one, named `Outer.inner`); one with none is cut like prose, every
piece keeping its symbol. Small neighbours under the same parent are packed together up to
the target; material between definitions (imports, constants) packs with its neighbours.
Chunks are whole lines; each carries its symbol path and 1-based line range. A later piece
of a split definition also carries the definition's signature (`head`), shown above its
text and never indexed, so a hit in the middle of a long function says which one it is.

Grammars come compiled in their wheels (`tree-sitter-python` ...): nothing is downloaded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from tree_sitter import Language, Node, Parser

__all__ = ["MAX_NESTING", "SIGNATURE_CHARS", "TREE_LANGUAGES", "Chunk", "tree_chunks"]

# A signature longer than this (a long parameter list) is not repeated on a later piece.
SIGNATURE_CHARS = 400
# A signature's last lines that start so are a comment opening the body, not signature.
_OPENERS = ("#", "//")
# Definitions inside definitions deeper than this are cut like prose within the deepest
# one: real code nests a few levels, and the split recurses once per level.
MAX_NESTING = 24


@dataclass(frozen=True)
class Chunk:
    """One chunk of a file: its text, the symbols it defines, its lines (1-based, 0: unknown),
    and for a later piece of a split definition that definition's signature, its lines then
    an elision line (`head`: not in `text` or its line range)."""

    text: str
    symbol: str = ""
    line_start: int = 0
    line_end: int = 0
    head: str = ""


def _grammar(module: str, function: str = "language") -> Callable[[], Any]:
    def load() -> Any:
        return getattr(import_module(module), function)()

    return load


# Imprint's language name -> the grammar (`typescript` files ending .tsx take the TSX one).
# A dict, not a constant set: a benchmark arm empties it to measure the line chunker.
TREE_LANGUAGES: dict[str, Callable[[], Any]] = {
    "python": _grammar("tree_sitter_python"),
    "javascript": _grammar("tree_sitter_javascript"),
    "typescript": _grammar("tree_sitter_typescript", "language_typescript"),
    "go": _grammar("tree_sitter_go"),
    "rust": _grammar("tree_sitter_rust"),
    "java": _grammar("tree_sitter_java"),
    "c": _grammar("tree_sitter_c"),
    "cpp": _grammar("tree_sitter_cpp"),
}
_TSX = _grammar("tree_sitter_typescript", "language_tsx")
# A parser is not safe to share between threads (ingests and the writer's re-chunking run
# on different ones): each thread keeps its own.
_LOCAL = threading.local()

# Node types that define something named by their `name` field.
_NAMED = frozenset(
    {
        "function_definition",  # python, c, cpp (c/cpp have no name field: see _name)
        "class_definition",
        "function_declaration",  # js, ts, go
        "generator_function_declaration",
        "class_declaration",  # js, ts, java
        "abstract_class_declaration",
        "interface_declaration",
        "enum_declaration",
        "type_alias_declaration",
        "method_definition",
        "function_signature",
        "internal_module",
        "module",
        "method_declaration",  # go, java
        "constructor_declaration",
        "record_declaration",
        "annotation_type_declaration",
        "function_item",  # rust
        "struct_item",
        "enum_item",
        "trait_item",
        "union_item",
        "mod_item",
        "macro_definition",
        "const_item",
        "static_item",
        "struct_specifier",  # c, cpp (only with a body)
        "class_specifier",
        "union_specifier",
        "enum_specifier",
        "namespace_definition",
    }
)
# Wrappers whose definition is inside them.
_WRAPPERS = {
    "decorated_definition": "definition",
    "export_statement": "declaration",
    "template_declaration": None,
}
_VARIABLES = frozenset({"lexical_declaration", "variable_declaration"})
_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})
_DECLARATORS = ("declarator", "name")


def _parser(lang: str, source: str) -> Parser | None:
    key = "tsx" if lang == "typescript" and source.lower().endswith(".tsx") else lang
    load = _TSX if key == "tsx" else TREE_LANGUAGES.get(lang)
    if load is None:
        return None
    parsers: dict[str, Parser] = _LOCAL.__dict__.setdefault("parsers", {})
    found = parsers.get(key)
    if found is None:
        found = parsers[key] = Parser(Language(load()))
    return found


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text else ""


def _c_name(node: Node | None) -> str:
    """The name inside a C/C++ declarator (`*f(int)`, `Foo::bar()`, `operator==`)."""
    while node is not None:
        if node.type in (
            "identifier",
            "field_identifier",
            "qualified_identifier",
            "destructor_name",
            "operator_name",
            "type_identifier",
        ):
            return _text(node)
        node = next(
            (c for f in _DECLARATORS if (c := node.child_by_field_name(f)) is not None), None
        )
    return ""


def _name(node: Node) -> str:
    """What a definition node defines, or "" when it is not one."""
    kind = node.type
    if kind in _VARIABLES:
        first = next((c for c in node.named_children if c.type == "variable_declarator"), None)
        return _text(first.child_by_field_name("name")) if first is not None else ""
    if kind == "impl_item":
        return _text(node.child_by_field_name("type"))
    if kind == "type_declaration":  # go: `type X struct {...}`
        spec = next((c for c in node.named_children if c.type == "type_spec"), None)
        return _text(spec.child_by_field_name("name")) if spec is not None else ""
    if kind == "type_definition":  # c: `typedef struct {...} X;`
        return _c_name(node.child_by_field_name("declarator"))
    if kind not in _NAMED:
        return ""
    if kind.endswith("_specifier") and node.child_by_field_name("body") is None:
        return ""  # `struct x y;` uses a type, it does not define one
    if kind == "function_definition" and node.child_by_field_name("name") is None:
        return _c_name(node.child_by_field_name("declarator"))
    name = _text(node.child_by_field_name("name"))
    if kind == "method_declaration" and (receiver := node.child_by_field_name("receiver")):
        # go: `func (r *Router) Handle(...)` -> Router.Handle
        kinds = [c for c in _walk(receiver) if c.type == "type_identifier"]
        if kinds:
            return f"{_text(kinds[0])}.{name}"
    return name or ("(anonymous)" if kind == "namespace_definition" else "")


def _walk(node: Node) -> Iterable[Node]:
    """`node` and every named node below it, in document order. A stack, not recursion: a
    file may nest a thousand levels deep (a Go receiver of 1,000 `*`, a 1,000-term string
    concatenation), far past Python's recursion limit."""
    stack = [node]
    while stack:
        found = stack.pop()
        yield found
        stack.extend(reversed(found.named_children))


def _definition(node: Node, top: bool = True) -> tuple[str, Node] | None:
    """The name and the defining node of a definition (unwrapping decorators, `export`);
    a variable is one only at the top of a file (inside a function it is a local)."""
    while node.type in _WRAPPERS:  # a loop: C++ templates nest as deep as a file likes
        field = _WRAPPERS[node.type]
        inner = node.child_by_field_name(field) if field else None
        if inner is None:
            inner = next((c for c in node.named_children if _name(c)), None)
        if inner is None:
            return None
        node = inner
    if node.type in _VARIABLES and not top:
        return None
    name = _name(node)
    return (name, node) if name else None


def _body(node: Node) -> Node | None:
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    if node.type == "type_declaration":  # go: a struct's fields, an interface's methods
        spec = next((c for c in node.named_children if c.type == "type_spec"), None)
        kind = spec.child_by_field_name("type") if spec is not None else None
        if kind is not None and kind.type == "struct_type":
            return next(
                (c for c in kind.named_children if c.type == "field_declaration_list"), None
            )
        if kind is not None and kind.type == "interface_type":
            return kind
    if node.type in _VARIABLES:  # `const X = class {...}` / an arrow function's block
        for child in _walk(node):
            if child is not node and child.child_by_field_name("body") is not None:
                return child.child_by_field_name("body")
    return None


def _opening(node: Node, body: Node | None) -> Node | None:
    """Where a definition's body opens, for its signature: `body`, but a variable's own
    value (an arrow function's block, a class's, an object literal's braces, the block of
    a callback it is made by), never a body nested deeper (a handler's inside an object
    literal: the pieces after it are not in that handler)."""
    if node.type not in _VARIABLES:
        return body
    for declarator in node.named_children:
        value = declarator.child_by_field_name("value")
        if value is None:
            continue
        inner = value.child_by_field_name("body")
        if inner is not None:
            return inner
        if value.type == "object":
            return value
        arguments = value.child_by_field_name("arguments")
        if value.type == "call_expression" and arguments is not None:
            # `const X = make("X", (inst, def) => {...})`: the callback's block.
            for argument in reversed(arguments.named_children):
                inner = argument.child_by_field_name("body")
                if inner is not None:
                    return inner
    return None


@dataclass
class _Seg:
    first: int  # 0-based row, inclusive
    last: int
    symbol: str  # "" for material between definitions
    node: Node | None = None  # the defining node, for splitting
    opens: int = -1  # the definition's first row: its decorators', not the comment above


def _segments(children: Iterable[Node], path: str, first: int, last: int) -> list[_Seg]:
    """A container's rows `first..last` as definitions and the gaps between them; a comment
    right above a definition belongs to it."""
    segs: list[_Seg] = []
    row = first
    pending_comment = -1  # first row of comments directly above the next definition
    for child in children:
        found = _definition(child, not path)
        start, end = child.start_point.row, child.end_point.row
        if child.type in _COMMENTS:
            if pending_comment < 0:
                pending_comment = max(start, row)
            continue
        if found is None:
            pending_comment = -1
            continue
        begin = max(pending_comment if pending_comment >= 0 else start, row)
        pending_comment = -1
        if begin > end:  # shares its line with the definition before
            continue
        if begin > row:
            segs.append(_Seg(row, begin - 1, ""))
        name = found[0] if not path else f"{path}.{found[0]}"
        segs.append(_Seg(begin, end, name, found[1], max(start, row)))
        row = end + 1
    if row <= last:
        segs.append(_Seg(row, last, ""))
    return segs


class _Builder:
    def __init__(self, lines: list[str], target: int, overlap: int, cut: Any):
        self.lines = lines
        self.target = target
        self.overlap = overlap
        self.cut = cut
        self.out: list[Chunk] = []
        # Each split definition's first row and signature (`signature`), by symbol path.
        self.signatures: dict[str, tuple[int, str]] = {}
        self.nesting = 0  # definitions being split, one inside another

    def size(self, seg: _Seg) -> int:
        return sum(len(line) for line in self.lines[seg.first : seg.last + 1])

    def emit(self, segs: list[_Seg], parent: str) -> None:
        pack: list[_Seg] = []
        packed = 0
        for seg in segs:
            size = self.size(seg)
            if size > self.target:
                if pack and not any(s.symbol for s in pack) and packed < self.target // 4:
                    # A short lead-in (a class line, a comment) opens the split definition.
                    seg = _Seg(pack[0].first, seg.last, seg.symbol, seg.node, seg.opens)
                    pack, packed = [], 0
                self.flush(pack, parent)
                pack, packed = [], 0
                self.split(seg, parent)
                continue
            if pack and packed + size > self.target and not self.joins(pack, packed, size):
                self.flush(pack, parent)
                pack, packed = [], 0
            pack.append(seg)
            packed += size
        self.flush(pack, parent)

    def joins(self, pack: list[_Seg], packed: int, size: int) -> bool:
        """Whether a piece joins a full pack anyway (up to target + overlap, the bound the
        line chunker keeps too): a crumb (a one-line method, a closing brace) after it, or
        after a short lead-in (a class line, a comment) the definition it introduces."""
        if packed + size > self.target + self.overlap:
            return False
        lead_in = not any(s.symbol for s in pack) and packed < self.target // 4
        return size < self.target // 8 or lead_in

    def flush(self, pack: list[_Seg], parent: str) -> None:
        if not pack:
            return
        own = [s.symbol for s in pack if s.symbol]
        symbols = own or ([parent] if parent else [])
        lines = self.lines[pack[0].first : pack[-1].last + 1]
        head = "" if own else self.head(parent, pack[0].first)
        self.add(lines, ", ".join(dict.fromkeys(symbols)), pack[0].first, head)

    def head(self, symbol: str, first_row: int) -> str:
        """The signature of the split definition `symbol` for a piece of its body starting
        at `first_row` ("" for the piece that holds the signature itself)."""
        start, signature = self.signatures.get(symbol, (0, ""))
        return signature if first_row > start + 1 else ""

    def signature(self, seg: _Seg, body: Node | None) -> str:
        """A definition's signature lines, up to where its body opens, then an elision line at
        the body's indent; "" where that is over SIGNATURE_CHARS or unknown."""
        if seg.node is None or body is None:
            return ""
        opens = body.start_point[0]
        line = self.lines[opens]
        if body.start_point[1] > len(line) - len(line.lstrip()):
            opens += 1  # the body opens on the signature's last line (`... {`)
        # From the decorators (`@app.get(...)`, a C++ `template <...>`), which say what the
        # definition is for, when they fit, to where its body opens.
        own = seg.node.start_point[0]
        for first in [seg.opens, own] if 0 <= seg.opens < own else [own]:
            lines = [text.rstrip() for text in self.lines[first:opens]]
            while lines and (not lines[-1].strip() or lines[-1].lstrip().startswith(_OPENERS)):
                lines.pop()  # a blank line or a comment that opens the body is not signature
            if lines and sum(len(text) + 1 for text in lines) <= SIGNATURE_CHARS:
                break
        else:
            return ""
        inner = self.lines[min(opens, seg.last)]
        indent = inner[: len(inner) - len(inner.lstrip())].strip("\r\n") or "    "
        return "\n".join([*lines, f"{indent}..."])

    def add(self, lines: list[str], symbol: str, first_row: int, head: str = "") -> None:
        """A chunk of `lines` starting at `first_row`, blank lines at its ends trimmed."""
        lines = list(lines)
        while lines and not lines[0].strip():
            lines.pop(0)
            first_row += 1
        while lines and not lines[-1].strip():
            lines.pop()
        if lines:
            text = "".join(lines).rstrip()
            end = first_row + len(lines)
            self.out.append(Chunk(text, symbol, first_row + 1, end, head))

    def split(self, seg: _Seg, parent: str) -> None:
        body = _body(seg.node) if seg.node is not None else None
        if seg.symbol and seg.node is not None:
            opening = _opening(seg.node, body)
            self.signatures[seg.symbol] = (seg.first, self.signature(seg, opening))
        inner = (
            _segments(body.named_children, seg.symbol, seg.first, seg.last)
            if body is not None and self.nesting < MAX_NESTING
            else []
        )
        defs = [s for s in inner if s.symbol]
        if defs:
            # The header (signature, docstring, fields) packs with what follows if small.
            head = [_Seg(seg.first, defs[0].first - 1, "")] if defs[0].first > seg.first else []
            self.nesting += 1
            try:
                self.emit(head + [s for s in inner if s.first >= defs[0].first], seg.symbol)
            finally:
                self.nesting -= 1
            return
        symbol = seg.symbol or parent
        text = "".join(self.lines[seg.first : seg.last + 1])
        row = seg.first
        pieces = self.cut(text, self.target)
        for i, piece in enumerate(pieces):
            prefix = _whole_lines_tail(pieces[i - 1], self.overlap) if i else ""
            lines = (prefix + piece).splitlines(keepends=True)
            start = max(row - prefix.count("\n"), 0)
            self.add(lines, symbol, start, self.head(symbol, start))
            row += piece.count("\n")


def _whole_lines_tail(text: str, overlap: int) -> str:
    """The last whole lines of `text` within `overlap` characters: a piece of code repeats
    the lines before it, never half of one (which would open its excerpt mid-statement)."""
    if overlap <= 0 or not text.endswith("\n"):
        return ""
    start = text.rfind("\n", 0, len(text) - 1)
    kept = len(text)
    while start >= 0 and len(text) - (start + 1) <= overlap:
        kept = start + 1
        start = text.rfind("\n", 0, start)
    return text[kept:]


def tree_chunks(
    text: str, lang: str, source: str, target: int, overlap: int, cut: Any
) -> list[Chunk] | None:
    """The chunks of a file in a language tree-sitter parses here; None for other languages
    (or a grammar that fails to load), which keep the line-pattern chunker; None too for a
    tree too deep for what is left of the stack (the line chunker takes the file whole)."""
    try:
        parser = _parser(lang, source)
    except (ImportError, OSError, ValueError):
        return None
    if parser is None:
        return None
    tree = parser.parse(text.encode("utf-8"))
    lines = text.splitlines(keepends=True)
    if not lines:
        return []
    builder = _Builder(lines, target, overlap, cut)
    try:
        builder.emit(_segments(tree.root_node.named_children, "", 0, len(lines) - 1), "")
    except RecursionError:
        return None
    return builder.out
