"""Structure-aware code chunks (tree-sitter): definitions as units, symbol paths, line
ranges, splitting at inner definitions, packing small neighbours, and the fallback."""

from __future__ import annotations

import textwrap

import pytest

from imprint.chunking import TREE_LANGUAGES, Chunk, chunk_file
from imprint.chunking._tree import SIGNATURE_CHARS, _parser

ACTOR = textwrap.dedent(
    '''\
    """Actors."""

    import threading


    class ActorRef:
        """A reference to a running actor."""

        timeout = 5.0

        def tell(self, message):
            """Send without waiting."""
            self._queue.put(message)
            return None

        def ask(self, message, block=True):
            future = self._future()
            self._queue.put((message, future))
            return future.get() if block else future


    def helper():
        return 1
    '''
)


def _lines_of(text: str, chunk: Chunk) -> str:
    return "".join(text.splitlines(keepends=True)[chunk.line_start - 1 : chunk.line_end])


def _covered(text: str, chunks: list[Chunk]) -> set[int]:
    rows = {i for c in chunks for i in range(c.line_start, c.line_end + 1)}
    return {i for i, line in enumerate(text.splitlines(), start=1) if line.strip()} - rows


def test_methods_are_units_named_by_their_class_and_carry_their_lines() -> None:
    """Over the target, a class splits into its header (docstring, fields) and each method,
    named `ActorRef.tell`; each chunk's lines are exactly its text in the file."""
    chunks = chunk_file(ACTOR, "python", "pykka/_actor.py", "code", target=160, overlap=0)
    by_symbol = {c.symbol: c for c in chunks}
    assert {"ActorRef.tell", "ActorRef.ask", "helper"} <= set(by_symbol)
    tell = by_symbol["ActorRef.tell"]
    assert tell.text.lstrip().startswith("def tell(") and "def ask" not in tell.text
    assert (tell.line_start, tell.line_end) == (11, 14)
    for chunk in chunks:
        assert _lines_of(ACTOR, chunk).strip() == chunk.text.strip()
    head = next(c for c in chunks if "class ActorRef" in c.text)
    assert "timeout = 5.0" in head.text and "def tell" not in head.text
    assert not _covered(ACTOR, chunks)


def test_small_neighbours_of_one_parent_are_packed_up_to_the_target() -> None:
    """Under the target the whole file is one chunk naming every definition in it."""
    chunks = chunk_file(ACTOR, "python", "a.py", "code", target=1200, overlap=0)
    assert len(chunks) == 1
    assert chunks[0].symbol == "ActorRef, helper"
    assert (chunks[0].line_start, chunks[0].line_end) == (1, 23)


def test_a_long_definition_without_inner_ones_is_cut_and_keeps_its_symbol() -> None:
    """A function over the target is cut at line boundaries; every piece is named by it,
    none is over target + overlap, and no line is lost."""
    body = "".join(f"    value_{i} = compute({i}, 'some argument text')\n" for i in range(60))
    text = f"def long_one():\n{body}    return value_0\n"
    chunks = chunk_file(text, "python", "a.py", "code", target=400, overlap=50)
    assert len(chunks) > 3
    assert {c.symbol for c in chunks} == {"long_one"}
    assert all(len(c.text) <= 450 for c in chunks)
    assert not _covered(text, chunks)
    assert [c.line_start for c in chunks] == sorted(c.line_start for c in chunks)
    # Each piece, its repeated overlap included, opens on a whole line of the file.
    rows = text.splitlines()
    assert all(c.text.splitlines()[0] == rows[c.line_start - 1] for c in chunks)


def test_a_later_piece_of_a_long_definition_carries_its_signature() -> None:
    """The pieces after the first carry the definition's signature and an elision line in
    `head`, outside their text and line range; the first piece, which holds it, has none."""
    body = "".join(f"    value_{i} = compute({i}, 'some argument text')\n" for i in range(60))
    text = f"def long_one(\n    values,\n    scale=2,\n):\n{body}    return value_0\n"
    chunks = chunk_file(text, "python", "a.py", "code", target=400, overlap=50)
    assert len(chunks) > 3 and chunks[0].head == ""
    assert {c.head for c in chunks[1:]} == {"def long_one(\n    values,\n    scale=2,\n):\n    ..."}
    for c in chunks:
        assert c.text == _lines_of(text, c).rstrip()


def test_a_decorated_signature_keeps_its_decorators_and_not_the_body_s_opening_comment() -> None:
    """Python: a decorated method's head holds its decorators (a route, `@mcp.tool()`, which
    say what the function is for) above the `def`, and not a comment or blank line that opens
    the body; the comment above the decorators stays out of the head too."""
    body = "".join(f"        value_{i} = compute({i}, 'some argument text')\n" for i in range(40))
    text = (
        "class Api:\n"
        "    # the listing route\n"
        '    @app.get("/items/{item_id}")\n'
        '    @requires("read")\n'
        "    def read_item(self, item_id: int) -> Item:\n"
        "\n"
        "        # look it up first\n"
        f"{body}        return value_0\n"
    )
    chunks = chunk_file(text, "python", "api.py", "code", target=400, overlap=0)
    later = [c for c in chunks if c.head]
    assert len(later) >= 2 and all(c.symbol == "Api.read_item" for c in later)
    assert {c.head for c in later} == {
        '    @app.get("/items/{item_id}")\n    @requires("read")\n'
        "    def read_item(self, item_id: int) -> Item:\n        ..."
    }
    # A signature that fits SIGNATURE_CHARS only without its decorators keeps them out.
    params = "".join(f"        argument_{i}: int = {i},\n" for i in range(12))
    signature = f"    def read_item(\n        self,\n{params}    ) -> Item:\n"
    assert len(signature) <= SIGNATURE_CHARS < len(signature) + 60
    long_text = text.replace("    def read_item(self, item_id: int) -> Item:\n", signature)
    later = [c for c in chunk_file(long_text, "python", "api.py", "code", 400, 0) if c.head]
    assert len(later) >= 2 and {c.head for c in later} == {signature + "        ..."}


def test_a_long_go_struct_is_headed_by_its_type_line() -> None:
    """Go: the later pieces of a long `type X struct {...}` carry `type X struct {` (it had
    no head: its fields are not a `body`)."""
    fields = "".join(f'\tField{i} string `json:"field_{i}"`\n' for i in range(50))
    text = f"package routes\n\n// Router routes.\ntype Router struct {{\n{fields}}}\n"
    chunks = chunk_file(text, "go", "router.go", "code", target=400, overlap=0)
    later = [c for c in chunks if c.symbol == "Router"][1:]
    assert len(later) >= 2 and {c.head for c in later} == {"type Router struct {\n\t..."}


def test_a_brace_language_signature_ends_where_its_body_opens() -> None:
    """TypeScript: the signature's last line is the one whose `{` opens the body; a method
    split at nothing inner is named and headed the same way."""
    body = "".join(f"  const part{i} = schema.shape[{i}] ?? mask;\n" for i in range(40))
    text = (
        "export function partial(\n  schema: Shape,\n  mask: object | undefined\n): any {\n"
        f"{body}  return schema;\n}}\n"
    )
    chunks = chunk_file(text, "typescript", "util.ts", "code", target=400, overlap=0)
    assert len(chunks) > 2 and chunks[0].head == ""
    assert {c.head for c in chunks[1:]} == {
        "export function partial(\n  schema: Shape,\n  mask: object | undefined\n): any {\n  ..."
    }


def test_an_object_literal_is_headed_by_its_own_opening_line() -> None:
    """JavaScript: the pieces of a long `const handlers = {...}` open with that line, not
    with the first handler's inside it (they are not in that handler); a long arrow
    function's pieces with the arrow's line."""
    keys = "".join(f"  key{i}: function (x) {{ return x + {i}; }}, // pad\n" for i in range(60))
    text = f"export const handlers = {{\n  foo(req) {{\n    return 1;\n  }},\n{keys}}};\n"
    chunks = chunk_file(text, "javascript", "a.js", "code", target=600, overlap=0)
    assert len(chunks) > 2
    assert {c.head for c in chunks[1:]} == {"export const handlers = {\n  ..."}
    lines = "".join(f"  const part{i} = values[{i}] * scale;\n" for i in range(40))
    arrow = f"export const scaled = (values, scale) => {{\n{lines}  return values;\n}};\n"
    pieces = chunk_file(arrow, "javascript", "a.js", "code", target=400, overlap=0)
    assert len(pieces) > 2
    assert {c.head for c in pieces[1:]} == {"export const scaled = (values, scale) => {\n  ..."}


def test_a_long_signature_and_a_packed_chunk_carry_none() -> None:
    """A signature over SIGNATURE_CHARS (a long parameter list) is not repeated, and chunks
    of whole small definitions never carry one."""
    params = "".join(f"    argument_{i}: int = {i},\n" for i in range(30))
    body = "".join(f"    total += argument_{i % 30} * {i}\n" for i in range(40))
    text = f"def many(\n{params}) -> int:\n    total = 0\n{body}    return total\n"
    assert all(c.head == "" for c in chunk_file(text, "python", "a.py", "code", 400, 0))
    assert all(c.head == "" for c in chunk_file(ACTOR, "python", "a.py", "code", 1200, 0))


SAMPLES = {
    "javascript": (
        "x.js",
        "export function parse(s) {\n  return s;\n}\n\nclass Queue {\n  push(x) {\n"
        "    this.items.push(x);\n  }\n}\n\nconst sum = (a, b) => a + b;\n",
        {"parse", "Queue.push", "sum"},
    ),
    "typescript": (
        "x.ts",
        "export interface Options {\n  strict: boolean;\n}\n\nexport class Schema {\n"
        "  parse(input: unknown): string {\n    return String(input);\n  }\n}\n",
        {"Options", "Schema.parse"},
    ),
    "go": (
        "x.go",
        "package main\n\ntype Router struct {\n\tname string\n}\n\n"
        "func (r *Router) Handle(path string) error {\n\treturn nil\n}\n",
        {"Router", "Router.Handle"},
    ),
    "rust": (
        "x.rs",
        "struct Point { x: i32 }\n\nimpl Point {\n    fn norm(&self) -> i32 {\n"
        "        self.x.abs()\n    }\n}\n",
        {"Point", "Point.norm"},
    ),
    "java": (
        "X.java",
        "public class Account {\n  private int balance;\n  public int deposit(int n) {\n"
        "    balance += n;\n    return balance;\n  }\n}\n",
        {"Account.deposit"},
    ),
    "c": (
        "x.c",
        "struct point { int x; };\n\nstatic int *add_points(int a, int b) {\n  return 0;\n}\n",
        {"point", "add_points"},
    ),
    "cpp": (
        "x.cpp",
        "namespace geo {\nclass Shape {\n public:\n  int area();\n};\n"
        "int Shape::area() { return 0; }\n}\n",
        {"geo.Shape", "geo.Shape::area"},
    ),
}


@pytest.mark.parametrize("lang", sorted(SAMPLES))
def test_each_parsed_language_names_its_definitions(lang: str) -> None:
    """Functions, methods (by their type or class) and types are named in each language."""
    source, text, want = SAMPLES[lang]
    chunks = chunk_file(text, lang, source, "code", target=30, overlap=0)
    symbols = {s for c in chunks for s in c.symbol.split(", ") if s}
    assert want <= symbols, symbols
    assert not _covered(text, chunks)


def test_tsx_files_parse_with_the_tsx_grammar() -> None:
    """A .tsx component is a definition (the TypeScript grammar alone cannot parse JSX)."""
    text = "export const App = () => <div className='x'>hi</div>;\n\nfunction f() {}\n"
    chunks = chunk_file(text, "typescript", "ui/App.tsx", "code", target=60, overlap=0)
    assert [c.symbol for c in chunks] == ["App", "f"]
    parsed = {
        name: _parser("typescript", name).parse(text.encode()).root_node.has_error  # type: ignore[union-attr]
        for name in ("App.tsx", "App.ts")
    }
    assert parsed == {"App.tsx": False, "App.ts": True}


def test_other_languages_and_an_emptied_table_keep_the_line_chunker() -> None:
    """Ruby has no grammar here: line-pattern chunks without symbols or lines; with the
    tree-sitter table emptied (the benchmark's `lines` arm) Python is chunked that way too."""
    ruby = chunk_file("def a\n  1\nend\n", "ruby", "a.rb", "code")
    assert ruby == [Chunk("def a\n  1\nend")]
    saved = dict(TREE_LANGUAGES)
    TREE_LANGUAGES.clear()
    try:
        plain = chunk_file(ACTOR, "python", "a.py", "code", target=160, overlap=0)
    finally:
        TREE_LANGUAGES.update(saved)
    assert plain and all(c.symbol == "" and c.line_start == 0 for c in plain)
