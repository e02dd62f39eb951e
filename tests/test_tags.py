"""Rule-based tags: language from the path, layer, kind, record type and topics."""

from __future__ import annotations

import pytest

from imprint.ingest.tags import file_kind, lang_of, layer_of, rule_tags, supported


@pytest.mark.parametrize(
    ("path", "lang"),
    [
        ("README.md", "markdown"),
        ("docs/guide.mdx", "markdown"),
        ("docs/index.rst", "rst"),
        ("notes.txt", "text"),
        ("src/app.py", "python"),
        ("stubs/app.pyi", "python"),
        ("web/App.tsx", "typescript"),
        ("web/index.mjs", "javascript"),
        ("cmd/main.go", "go"),
        ("src/lib.rs", "rust"),
        ("include/x.hpp", "cpp"),
        ("include/x.h", "c"),
        ("setup.cfg", "ini"),
        ("ci.yml", "yaml"),
        ("pyproject.toml", "toml"),
        ("scripts/run.bash", "shell"),
    ],
)
def test_lang_of_maps_known_suffixes(path: str, lang: str) -> None:
    """A known file suffix gives its language."""
    assert lang_of(path) == lang


def test_lang_of_ignores_suffix_case() -> None:
    """Upper-case suffixes are recognised like lower-case ones."""
    assert lang_of("SRC/MAIN.PY") == "python"
    assert lang_of("Docs/Guide.MD") == "markdown"


@pytest.mark.parametrize(
    ("path", "lang"),
    [
        ("Dockerfile", "docker"),
        ("deploy/dockerfile", "docker"),
        ("Makefile", "make"),
    ],
)
def test_lang_of_knows_build_file_names(path: str, lang: str) -> None:
    """Dockerfile and Makefile get a language from their name, in any case."""
    assert lang_of(path) == lang


@pytest.mark.parametrize("path", ["README", "LICENSE", "LICENSE-MIT", "docs/CHANGES", "Procfile"])
def test_files_without_a_suffix_are_supported_text(path: str) -> None:
    """Other suffixless files are plain text and supported."""
    assert lang_of(path) == "text"
    assert supported(path) is True


@pytest.mark.parametrize("path", ["image.png", "archive.tar.gz", "data.bin", "font.woff2"])
def test_unknown_suffixes_have_no_language_and_are_unsupported(path: str) -> None:
    """Files with an unknown suffix get lang '' and supported() is False."""
    assert lang_of(path) == ""
    assert supported(path) is False


@pytest.mark.parametrize(
    "path", [".gitignore", ".env", "proj/.bashrc", "web/.eslintrc.json", ".github.md"]
)
def test_dotfiles_are_never_supported(path: str) -> None:
    """Dotfiles are tool configuration, never memory, whatever their suffix."""
    assert supported(path) is False


@pytest.mark.parametrize("path", ["a.py", "README.md", "Dockerfile", "x/y/z.ts"])
def test_known_files_are_supported(path: str) -> None:
    """supported() is True exactly for files with a language."""
    assert supported(path) is True


@pytest.mark.parametrize(
    ("path", "layer"),
    [
        ("tests/test_store.py", "test"),
        ("pkg/Tests/helpers.py", "test"),
        ("web/__tests__/app.js", "test"),
        ("spec/model.rb", "test"),
        ("src/test_utils.py", "test"),
        ("tests/README.md", "test"),
        ("README.md", "docs"),
        ("docs/conf.py", "docs"),
        ("docs/settings.toml", "docs"),
        ("documentation/api.go", "docs"),
        ("config.yaml", "config"),
        ("settings.json", "config"),
        ("Dockerfile", "config"),
        ("Makefile", "config"),
        ("src/app.py", "source"),
        ("contest/solver.py", "source"),
        ("src/latest.py", "source"),
    ],
)
def test_layer_of(path: str, layer: str) -> None:
    """Layer: test folders/files first, then docs (prose or docs folders), config, source."""
    assert layer_of(path, lang_of(path)) == layer


@pytest.mark.parametrize(
    ("lang", "kind"),
    [
        ("markdown", "markdown"),
        ("rst", "rst"),
        ("text", "text"),
        ("yaml", "text"),
        ("json", "text"),
        ("python", "code"),
        ("go", "code"),
        ("docker", "code"),
    ],
)
def test_file_kind(lang: str, kind: str) -> None:
    """Markdown and reST chunk as themselves, prose and config as text, the rest as code."""
    assert file_kind(lang) == kind


def test_rule_tags_has_every_field() -> None:
    """rule_tags returns lang, layer, kind, type, topics and an empty domains tuple."""
    tags = rule_tags("src/retry.py", "def retry(): pass")
    assert set(tags) == {"lang", "layer", "kind", "type", "topics", "domains"}
    assert tags["lang"] == "python"
    assert tags["layer"] == "source"
    assert tags["kind"] == "code"
    assert tags["type"] == "note"
    assert tags["domains"] == ()


@pytest.mark.parametrize(
    ("path", "kind"),
    [("a.md", "doc"), ("a.rst", "doc"), ("a.txt", "doc"), ("a.toml", "config"), ("a.go", "code")],
)
def test_rule_tags_kind(path: str, kind: str) -> None:
    """kind is doc for prose, config for config formats, code otherwise."""
    assert rule_tags(path, "")["kind"] == kind


@pytest.mark.parametrize(
    ("text", "record_type"),
    [
        ("After a long debate we decided to use SQLite.", "decision"),
        ("Decision: keep one writer actor.", "decision"),
        ("ADR 7: embedded store", "decision"),
        ("Status: Accepted", "decision"),
        ("The architecture has three layers.", "architecture"),
        ("We follow the actor model throughout.", "architecture"),
        ("See the component diagram.", "architecture"),
        ("The padres undecided about the quadratic.", "note"),
        ("Architectures vary.", "note"),
        ("", "note"),
    ],
)
def test_rule_tags_record_type(text: str, record_type: str) -> None:
    """type is decision or architecture on whole-word cues, else note."""
    assert rule_tags("notes.md", text)["type"] == record_type


def test_decision_cues_take_precedence_over_architecture() -> None:
    """Text with both decision and architecture cues is a decision."""
    text = "We decided on the actor model architecture."
    assert rule_tags("adr.md", text)["type"] == "decision"


def test_topics_are_the_most_frequent_non_stop_words() -> None:
    """Topics are the most common words of 4+ letters, minus stop words, most frequent first."""
    text = (
        "Chroma chroma CHROMA embedding embedding actor mailbox mailbox mailbox mailbox "
        "should should should should should which which which which which the the the"
    )
    assert rule_tags("n.md", text)["topics"] == ("mailbox", "chroma", "embedding", "actor")


def test_topics_are_capped_at_five_with_ties_in_first_seen_order() -> None:
    """At most five topics; equally frequent words keep the order they first appear in."""
    text = "zeta alpha omega delta gamma kappa sigma"
    assert rule_tags("n.md", text)["topics"] == ("zeta", "alpha", "omega", "delta", "gamma")


def test_topics_skip_short_words_and_digits() -> None:
    """Words under four letters and digit runs are never topics."""
    text = "cat dog 12345 x1 api api api sqlite3"
    assert rule_tags("n.md", text)["topics"] == ("sqlite",)
