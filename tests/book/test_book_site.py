"""The book site's tools without building the book: the package reference, the chapter
notebooks, the MathJax copy, the bibliography labels and the pages' lighter markup."""

from __future__ import annotations

import ast
import re
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import jupytext
import nbformat
import pytest
import yaml
from IPython.core.inputtransformer2 import TransformerManager

from support import ROOT
from support.scratch import CELL_A, chapter, make_book

import book
from book import bibliography, execution, notebooks, reference, static, weight

REPO = "https://github.com/scratchformer/scratchformer"

CELL_CLASS = '''
# Modules

## Layers that `scale`

Some prose.

```{code-cell} ipython3
:tags: [export]

from torch import nn

WIDTH: int = 4
LIMITS = (0, 1)


class Scaler(nn.Module):
    """Multiply by a constant.
    """

    def __init__(self, factor: float = 2.0, *, bias: bool = False) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, x, /):
        """Scale `x`."""
        return x * self.factor

    def _private(self):
        return None
```
'''


def test_arguments_are_written_like_inspect_signature() -> None:
    def sig(source: str) -> str:
        function = ast.parse(source).body[0]
        return reference.format_arguments(function.args)

    assert sig("def f(a, b: int = 1, *args, c, d: str = 'x', **kw): pass") == \
        "(a, b: int = 1, *args, c, d: str = 'x', **kw)"
    assert sig("def f(a, /, b=2, *, c): pass") == "(a, /, b=2, *, c)"
    assert sig("def f(x: Tensor | None = None): pass") == "(x: Tensor | None = None)"


def test_reference_lists_every_name_with_signature_docstring_and_section(tmp_path: Path) -> None:
    root = make_book(tmp_path, {"a": chapter(CELL_A, doc="Demo module."), "b": chapter(CELL_CLASS)})
    text = reference.render(root)
    collected = [name for module in book.collect(root).values() for b in module.blocks for name in b.names]
    assert collected == ["add", "WIDTH", "LIMITS", "Scaler"]
    assert "## scratchformer.demo" in text
    assert "```{py:module} scratchformer.demo" in text
    assert "Demo module." in text
    assert "```{py:function} add(a: int, b: int) -> int\n:module: \"scratchformer.demo\"" in text
    assert "```{py:data} WIDTH\n:module: \"scratchformer.demo\"\n:value: \"4\"" in text
    assert "```{py:data} LIMITS\n:module: \"scratchformer.demo\"\n:value: \"(0, 1)\"" in text
    # A class: its __init__'s signature without self, nested public methods, no private ones.
    assert "````{py:class} Scaler(factor: float = 2.0, *, bias: bool = False)" in text
    assert "```{py:method} forward(x, /)\n\nScale `x`.\n```" in text
    assert "_private" not in text
    # The docstring's closing "Taught in ...", which the exporter adds, links to the section the
    # cell sits under (the pages of this book are not numbered: they read as appendices).
    assert '[Taught in the appendix "Modules", "Layers that `scale`"](b.md#layers-that-scale).' in text
    # Without such a line, the link is added.
    assert "Taught in [A chapter › Adding](a.md#adding)." in text
    # The index line links every name.
    assert "{py:obj}`~scratchformer.demo.Scaler`" in text


def test_directive_option_values_survive_yaml() -> None:
    import yaml

    pattern = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+: #x"""
    text = reference._directive("data", "PATTERN", {"value": pattern}, "")
    (option_line,) = [line for line in text.splitlines() if line.startswith(":value:")]
    assert yaml.safe_load(option_line.removeprefix(":value:")) == pattern


def test_section_anchors_are_myst_slugs_and_unique() -> None:
    text = "---\nkernelspec: {}\n---\n# Title\n\n## The `x` part!\n\n```python\n# not a heading\n```\n\n## The `x` part!\n"
    assert reference.heading_anchors(text) == [
        (4, 1, "Title", "title"),
        (6, 2, "The x part!", "the-x-part"),
        (12, 2, "The x part!", "the-x-part-1"),
    ]


def test_reference_refuses_a_cell_under_no_heading(tmp_path: Path) -> None:
    body = "```{code-cell} ipython3\n:tags: [export]\n\ndef f():\n    return 1\n```\n"
    root = make_book(tmp_path, {"a": chapter(body)})
    with pytest.raises(book.ExportError, match=r"book/a\.md:\d+: exported cell sits under no heading"):
        reference.render(root)


def test_repository_reference_covers_the_package() -> None:
    text = reference.render(ROOT)
    for module in book.collect(ROOT).values():
        for block in module.blocks:
            for name in block.names:
                assert f"{{py:obj}}`~{module.name}.{name}`" in text


ADDITIONS = "## What this chapter added to the package\n\n```{package-additions}\n```\n\nProse after the list.\n"


def test_a_chapter_closes_with_its_names_generated_from_its_cells(tmp_path: Path) -> None:
    root = make_book(tmp_path, {"a": chapter(CELL_A), "b": chapter(CELL_CLASS + ADDITIONS), "c": chapter("# C\n")})
    text = reference.chapter_additions(root, "book/b.md")
    assert text.startswith("In {py:mod}`scratchformer.demo`:\n\n")
    assert ("- {py:class}`Scaler(factor=2.0, *, bias=False) <scratchformer.demo.Scaler>`: Multiply by a constant. "
            "Methods: {py:meth}`forward <scratchformer.demo.Scaler.forward>`.") in text
    assert "- Constants: {py:data}`WIDTH <scratchformer.demo.WIDTH>`, {py:data}`LIMITS <scratchformer.demo.LIMITS>`." in text
    assert "add" not in text, "only this chapter's names"
    assert "`add(a, b) <scratchformer.demo.add>`" in reference.chapter_additions(root, "book/a.md")
    assert reference.chapter_additions(root, "book/c.md").strip() == reference.NO_ADDITIONS
    plain = reference.chapter_additions(root, "book/b.md", plain=True)
    assert "- `Scaler(factor=2.0, *, bias=False)`: Multiply by a constant. Methods: `forward`." in plain
    assert "{py:" not in plain
    # The published notebook has the list written out, since notebooks know no directives.
    notebook = notebooks.chapter_notebook(root / "book" / "b.md", REPO)
    closing = notebook.cells[-1].source
    assert "{package-additions}" not in closing and plain.strip() in closing and "Prose after the list." in closing


def test_defaults_that_would_break_a_link_title_are_elided() -> None:
    function = ast.parse("def f(a, marker='</w>', tick='`', n=3): pass").body[0]
    assert reference.format_arguments(function.args, annotations=False) == "(a, marker=..., tick=..., n=3)"


def test_every_chapter_lists_every_public_name_it_exports() -> None:
    for module in book.collect(ROOT).values():
        for block in module.blocks:
            text = reference.chapter_additions(ROOT, block.chapter)
            for name in block.names:
                if not name.startswith("_"):
                    assert f" <{module.name}.{name}>`" in text, f"{block.chapter} does not list {name}"


def test_notebook_starts_with_the_install_cell_and_keeps_the_chapter(tmp_path: Path) -> None:
    root = make_book(tmp_path, {"a": chapter(CELL_A)})
    path = root / "book" / "a.md"
    notebook = notebooks.chapter_notebook(path, REPO)
    nbformat.validate(notebook)
    first = notebook.cells[0]
    assert first.cell_type == "code" and first.id == notebooks.INSTALL_CELL_ID
    assert f'"scratchformer @ git+{REPO}@main"' in first.source
    original = jupytext.read(path, fmt="md:myst")
    assert [c.source for c in notebook.cells[1:]] == [c.source for c in original.cells]
    assert notebook.cells[2].metadata["tags"] == ["export"]
    assert set(notebook.metadata) == {"kernelspec", "language_info"}
    assert notebooks.chapter_notebook(path, REPO) == notebook, "ids and content are deterministic"
    out = tmp_path / "out" / "a.ipynb"
    assert notebooks.write_notebook(notebook, out) and not notebooks.write_notebook(notebook, out)
    assert nbformat.read(out, as_version=4) == notebook


def run_install_cell(source: str, importable: bool) -> list[tuple[str, str]]:
    """Run the install cell as IPython would; return the line magics it ran."""
    calls: list[tuple[str, str]] = []
    shell = SimpleNamespace(run_line_magic=lambda name, line: calls.append((name, line)))
    python = TransformerManager().transform_cell(source)
    saved = sys.modules.get("scratchformer")
    sys.modules["scratchformer"] = saved if importable else None  # None makes `import` fail
    try:
        exec(compile(python, "<install cell>", "exec"), {"get_ipython": lambda: shell})
    finally:
        if saved is None:
            sys.modules.pop("scratchformer", None)
        else:
            sys.modules["scratchformer"] = saved
    return calls


def test_install_cell_installs_only_where_the_package_is_missing() -> None:
    import scratchformer  # noqa: F401 - inside the repository it is importable

    source = notebooks.install_source(REPO, "main")
    assert run_install_cell(source, importable=True) == []
    calls = run_install_cell(source, importable=False)
    assert len(calls) == 1 and calls[0][0] == "pip"
    assert calls[0][1].startswith("install --quiet ")
    assert f'"scratchformer @ git+{REPO}@main"' in calls[0][1] and '"myst-nb>=1.0"' in calls[0][1]


def test_install_cell_refuses_a_non_https_repository() -> None:
    with pytest.raises(ValueError, match="https url"):
        notebooks.install_source("git@github.com:scratchformer/scratchformer.git", "main")


def test_binder_requirements_name_the_package_and_cpu_torch() -> None:
    text = notebooks.binder_requirements(REPO, "main")
    assert f"scratchformer @ git+{REPO}@main" in text.splitlines()
    assert f"--extra-index-url {notebooks.TORCH_CPU_INDEX}" in text.splitlines()


def test_copy_if_changed_copies_only_what_differs(tmp_path: Path) -> None:
    source, target = tmp_path / "src", tmp_path / "dst"
    (source / "sub").mkdir(parents=True)
    (source / "a.js").write_text("a")
    (source / "sub" / "b.woff").write_bytes(b"b")
    assert static.copy_if_changed(source, target) == 2
    assert static.copy_if_changed(source, target) == 0
    (source / "a.js").write_text("A")
    assert static.copy_if_changed(source, target) == 1
    assert (target / "a.js").read_text() == "A" and (target / "sub" / "b.woff").read_bytes() == b"b"


def test_bibliography_labels_read_like_citations() -> None:
    from pybtex.database import Entry, Person

    def entry(year: str, *authors: str) -> Entry:
        return Entry("article", fields={"year": year}, persons={"author": [Person(a) for a in authors]})

    entries = [
        entry("2016", "Ba, Jimmy", "Kiros, Jamie", "Hinton, Geoffrey"),
        entry("2016", "Hendrycks, Dan", "Gimpel, Kevin"),
        entry("2016", "Sennrich, Rico"),
        entry("2016", "Sennrich, Rico"),
    ]
    labels = list(bibliography.AuthorYearLabels().format_labels(entries))
    assert labels == ["Ba et al., 2016", "Hendrycks and Gimpel, 2016", "Sennrich, 2016", "Sennrich, 2016b"]


def test_repository_bibliography_has_the_papers_the_book_cites() -> None:
    """Every cited key has an entry, and every entry is cited somewhere in the book."""
    import re

    from pybtex.database import parse_file

    keys = set(parse_file(str(ROOT / "book" / "references.bib")).entries)
    cited = {
        key.strip()
        for page in (ROOT / "book").glob("*.md")
        for group in re.findall(r"\{cite(?::[a-z]+)?\}`([^`]+)`", page.read_text(encoding="utf-8"))
        for key in group.split(",")
    }
    assert {"vaswani2017attention", "bahdanau2015neural", "radford2019language"} <= cited
    assert cited == keys, f"cited but missing: {cited - keys}; listed but never cited: {keys - cited}"


# --- The execution cache follows the package and the data --------------------------------------


def package_copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    package = root / "src" / "scratchformer"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""The package."""\n')
    (package / "attention.py").write_text("def attend():\n    return 1\n")
    return root


def test_execution_fingerprint_follows_the_package_source(tmp_path: Path) -> None:
    root = package_copy(tmp_path)
    before = execution.execution_fingerprint(root, {})
    assert before == execution.execution_fingerprint(root, {})
    (root / "src" / "scratchformer" / "__pycache__").mkdir()
    (root / "src" / "scratchformer" / "__pycache__" / "attention.cpython-311.pyc").write_bytes(b"\0")
    assert execution.execution_fingerprint(root, {}) == before, "byte code is not source"
    (root / "src" / "scratchformer" / "attention.py").write_text("def attend():\n    return 2\n")
    after = execution.execution_fingerprint(root, {})
    assert after["package"] != before["package"]
    assert execution.changed_parts(before, after) == ["the package source (src/scratchformer) changed"]


def book_copy(tmp_path: Path) -> Path:
    """The chapters, the book's own package and the records, as a build reads them."""
    root = tmp_path / "repo"
    for name in ("book", "scratchbook"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return root


def test_a_page_is_keyed_on_the_book_modules_it_imports_and_the_records_it_reads(tmp_path: Path) -> None:
    """Only what a page uses: chapter 11's record reader is not chapter 12's, chapter 12's
    record is not chapter 11's; the diagrams every chapter imports key every chapter."""
    root = book_copy(tmp_path)
    pages = sorted((root / "book").glob("*.md"))

    def keys() -> dict[str, str]:
        return execution.page_fingerprints(root, pages)

    def changed(before: dict[str, str]) -> list[str]:
        after = keys()
        return sorted(page for page in after if after[page] != before[page])

    modules, records = execution.page_inputs(root, root / "book" / "12_gpt.md")
    assert root / "scratchbook/src/scratchbook/records/gpt.py" in modules and "gpt_kv_cache.json" in records
    assert "gpt_cpu_sampling" in records, "a folder of records named at run time"
    assert root / "scratchbook/src/scratchbook/records/gap.py" not in modules and "imdb_gap.json" not in records
    before = keys()
    reader = root / "scratchbook" / "src" / "scratchbook" / "records" / "gap.py"
    reader.write_text(reader.read_text() + "\n# an edit\n")
    assert changed(before) == ["book/experiments_11.md"]
    before = keys()
    record = root / "book" / "results" / "gpt_kv_cache.json"
    record.write_text(record.read_text().replace('"rows"', '"rows" ', 1))
    assert changed(before) == ["book/12_gpt.md", "book/experiments_12.md", "book/running.md"], (
        "the appendices quote it too")
    before = keys()
    (root / "book" / "results" / "gpt_cpu_sampling" / "greedy.json").write_text("{}")
    assert changed(before) == ["book/12_gpt.md", "book/experiments_12.md"], "a folder of records"
    before = keys()
    diagrams = root / "scratchbook" / "src" / "scratchbook" / "diagrams.py"
    diagrams.write_text(diagrams.read_text() + "\n# an edit\n")
    assert set(changed(before)) >= {f"book/{n:02d}_{t}.md" for n, t in (
        (1, "tokenization"), (4, "self_attention"), (9, "transformer_block"), (13, "pretraining"))}


def test_only_the_changed_pages_lose_their_cached_outputs(tmp_path: Path) -> None:
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    root = tmp_path / "repo"
    cache = tmp_path / "cache"
    for name in ("a", "b"):
        (root / f"{name}.md").parent.mkdir(parents=True, exist_ok=True)
        (root / f"{name}.md").write_text(name)
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"print('{name}')")])
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        get_cache(str(cache)).cache_notebook_bundle(
            CacheBundleIn(notebook, str(root / f"{name}.md")), check_validity=False, overwrite=True)
    assert execution.drop_changed_pages(cache, {"a.md": "1", "b.md": "1"}, root) == []
    assert len(get_cache(str(cache)).list_cache_records()) == 2
    assert execution.drop_changed_pages(cache, {"a.md": "1", "b.md": "2"}, root) == ["b.md"]
    assert [Path(r.uri).name for r in get_cache(str(cache)).list_cache_records()] == ["a.md"]
    assert execution.drop_changed_pages(cache, {"a.md": "1", "b.md": "2"}, root) == [], "recorded"


def test_a_page_whose_inputs_changed_is_read_again_alone() -> None:
    app = SimpleNamespace(scratchformer_execution={"package": "p"},
                          scratchformer_pages={"book/11_training.md": "1", "book/12_gpt.md": "1"})
    env = SimpleNamespace(found_docs={"book/11_training", "book/12_gpt"})
    execution.remember_execution(app, env)
    assert execution.outdated_pages(app, env, set(), set(), set()) == []
    app.scratchformer_pages = {"book/11_training.md": "2", "book/12_gpt.md": "1"}
    assert execution.outdated_pages(app, env, set(), set(), set()) == ["book/11_training"]


def test_execution_fingerprint_follows_the_figures_style(tmp_path: Path) -> None:
    root = package_copy(tmp_path)
    (root / "book").mkdir()
    (root / "book" / "matplotlibrc").write_text("font.size: 11\n")
    before = execution.execution_fingerprint(root, {})
    (root / "book" / "matplotlibrc").write_text("font.size: 12\n")
    after = execution.execution_fingerprint(root, {})
    assert execution.changed_parts(before, after) == ["the figures' style (book/matplotlibrc) changed"]


def test_execution_fingerprint_follows_the_imdb_data_and_the_requirement(tmp_path: Path) -> None:
    root = package_copy(tmp_path)
    data = tmp_path / "imdb"
    no_cache = {"HF_DATASETS_CACHE": str(tmp_path / "no-cache")}
    assert execution.imdb_fingerprint(no_cache) == "none"
    assert execution.imdb_fingerprint({"IMDB_DIR": str(data)}) == "none", "a missing folder is no data"
    data.mkdir()
    (data / "train.jsonl").write_text('{"text": "good", "label": 1}\n')
    with_data = execution.imdb_fingerprint({"IMDB_DIR": str(data)})
    assert with_data != "none"
    (data / "train.jsonl").write_text('{"text": "good", "label": 1}\n{"text": "bad", "label": 0}\n')
    assert execution.imdb_fingerprint({"IMDB_DIR": str(data)}) != with_data
    (data / "aclImdb" / "test").mkdir(parents=True)
    grown = execution.imdb_fingerprint({"IMDB_DIR": str(data)})
    (data / "aclImdb" / "test" / "0_3.txt").write_text("Dull.")
    assert execution.imdb_fingerprint({"IMDB_DIR": str(data)}) != grown, "files in sub-folders count"
    stand_in = execution.execution_fingerprint(root, no_cache)
    real = execution.execution_fingerprint(root, {"IMDB_DIR": str(data), "SCRATCHFORMER_REQUIRE_IMDB": "1"})
    assert execution.changed_parts(stand_in, real) == [
        "the IMDB data (IMDB_DIR or the datasets cache) changed", "SCRATCHFORMER_REQUIRE_IMDB changed",
    ]


def test_the_jupyter_cache_is_emptied_when_the_fingerprint_changes(tmp_path: Path) -> None:
    cache = tmp_path / "_build" / ".jupyter_cache"
    (cache / "executed").mkdir(parents=True)
    (cache / "global.db").write_text("cached outputs of unknown origin")
    stand_in = {"package": "p1", "imdb": "none", "require_imdb": ""}
    assert execution.refresh_execution_cache(cache, stand_in) == [
        "no record of what the cached outputs were computed with"
    ]
    assert not (cache / "global.db").exists()
    (cache / "global.db").write_text("outputs computed on the stand-in")
    assert execution.refresh_execution_cache(cache, stand_in) == [], "same package and data: the cache stays"
    assert (cache / "global.db").exists()
    real = dict(stand_in, imdb="abc", require_imdb="1")
    assert execution.refresh_execution_cache(cache, real)
    assert not (cache / "global.db").exists(), "a build on IMDB does not reuse the stand-in's outputs"
    (cache / "global.db").write_text("outputs computed on IMDB")
    assert execution.refresh_execution_cache(cache, stand_in), "nor the reverse"
    assert not (cache / "global.db").exists()


def test_every_page_is_reread_when_pages_were_read_against_other_code() -> None:
    app = SimpleNamespace(scratchformer_execution={"package": "p2"})
    env = SimpleNamespace(found_docs={"book/04_self_attention", "book/05_scaling"})
    assert execution.outdated_pages(app, env, set(), set(), set()) == ["book/04_self_attention", "book/05_scaling"]
    execution.remember_execution(app, env)
    assert execution.outdated_pages(app, env, set(), set(), set()) == []
    app.scratchformer_execution = {"package": "p3"}
    assert len(execution.outdated_pages(app, env, set(), set(), set())) == 2


def test_the_pages_workflow_builds_on_imdb_with_an_exact_cache() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text())
    steps = workflow["jobs"]["build-and-deploy"]["steps"]
    cache = next(step for step in steps if step.get("uses", "").startswith("actions/cache"))
    assert "restore-keys" not in cache["with"], "a near-miss cache would serve outputs of other code"
    build = next(step for step in steps if "make book" in step.get("run", ""))
    assert build["env"]["SCRATCHFORMER_REQUIRE_IMDB"] == "1"
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'data = ["datasets' in pyproject and ".[book,test,data,bench]" in (ROOT / "Makefile").read_text()


def test_imdb_in_the_datasets_cache_counts_as_data(tmp_path: Path) -> None:
    """`make imdb` fills the datasets cache; a build after it must not reuse stand-in outputs."""
    environ = {"HF_DATASETS_CACHE": str(tmp_path / "cache")}
    assert execution.imdb_fingerprint(environ) == "none"
    (tmp_path / "cache" / "other_dataset").mkdir(parents=True)
    assert execution.imdb_fingerprint(environ) == "none", "only IMDB counts"
    shard = tmp_path / "cache" / "stanfordnlp___imdb" / "plain_text" / "train.arrow"
    shard.parent.mkdir(parents=True)
    shard.write_bytes(b"arrow")
    cached = execution.imdb_fingerprint(environ)
    assert cached.startswith("datasets cache ")
    shard.write_bytes(b"arrow, longer")
    assert execution.imdb_fingerprint(environ) != cached
    data = tmp_path / "imdb"
    data.mkdir()
    assert execution.imdb_fingerprint({**environ, "IMDB_DIR": str(data)}) != cached, "IMDB_DIR wins"


THEME_PYGMENTS_STYLES = ["a11y-high-contrast-light", "a11y-high-contrast-dark"]  # pydata-sphinx-theme's


def test_code_drops_only_the_spans_the_theme_draws_as_plain_text() -> None:
    """Each token the lighter formatter leaves bare is drawn by both of the theme's styles
    exactly as the block's text; every other token keeps its span and class."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer
    from pygments.styles import get_style_by_name
    from pygments.token import Name, Punctuation, Text

    plain = weight.plain_token_types(THEME_PYGMENTS_STYLES)
    assert {Name, Punctuation} <= plain
    for name in THEME_PYGMENTS_STYLES:
        style = get_style_by_name(name)
        assert all(style.style_for_token(ttype) == style.style_for_token(Text) for ttype in plain)
    code = "import json\nvalue = json.loads('[1, 2]')  # parse\nprint(value[0])\n"
    full = highlight(code, PythonLexer(), HtmlFormatter())
    light = highlight(code, PythonLexer(), weight.plain_token_formatter(plain)())
    assert '<span class="n">' in full and '<span class="n">' not in light and '<span class="p">' not in light
    for kept in ('<span class="kn">import</span>', '<span class="nb">print</span>', '<span class="c1"># parse</span>',
                 '<span class="mi">0</span>'):
        assert kept in full and kept in light
    assert re.sub(r"<[^>]+>", "", light) == re.sub(r"<[^>]+>", "", full)  # the same text, to the character
    assert len(light) < 0.75 * len(full)


def test_figures_get_their_size_and_load_lazily(tmp_path: Path) -> None:
    import struct
    import zlib

    png = tmp_path / "figure.png"
    header = struct.pack(">IIBBBBB", 320, 200, 8, 2, 0, 0, 0)
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + header
                    + struct.pack(">I", zlib.crc32(b"IHDR" + header)))
    svg = tmp_path / "plot.svg"
    svg.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="72pt" height="36pt"></svg>')
    body = ('<p><img alt="a" src="../_images/figure.png" /></p><img src="../_images/plot.svg" class="x">'
            '<img src="../_images/gone.png" loading="eager"><img src="https://example.org/x.png">')
    out = weight.with_image_attributes(body, {"figure.png": png, "plot.svg": svg})
    assert '<img alt="a" src="../_images/figure.png" width="320" height="200" loading="lazy" decoding="async"/>' in out
    assert '<img src="../_images/plot.svg" class="x" width="96" height="48" loading="lazy" decoding="async">' in out
    assert '<img src="../_images/gone.png" loading="eager" decoding="async">' in out  # no file: no size
    assert '<img src="https://example.org/x.png">' in out
