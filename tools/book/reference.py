"""Write the book's package reference: every exported name, from the chapters themselves.

The reference is built from what `tools/export.py` collects, so it lists exactly what the
package contains: for each module its docstring, then each exported function, class and
constant with its signature, its docstring (and a class's public methods), and a link to the
section of the chapter that teaches it. The text is MyST Markdown using Sphinx's Python
domain, so names get index entries, appear in the page's contents, and chapters can link to
them: {py:func}`~scratchformer.nn.attention.scaled_dot_product_attention`,
{py:class}`~scratchformer.nn.attention.SelfAttention`, {py:mod}`scratchformer.nn.attention`.

    PYTHONPATH=tools python -m book.reference    # print the generated Markdown
    PYTHONPATH=tools python -m book.reference book/04_self_attention.md   # what that chapter adds

The book build (tools/book/site.py) inserts this text into `book/reference.md` at read
time; nothing generated is committed. The same names, chapter by chapter, make the list
that closes each chapter ("What this chapter added to the package", the directive
`package-additions`): each function and class with its parameters and the first paragraph
of its docstring, then the constants.

What this deliberately does not handle: names defined by other means than a top-level
`def`, `class` or assignment, nested classes, and properties (they are listed as methods).
"""

from __future__ import annotations

import ast
import functools
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import book

MARKER = "<!-- package-reference -->"
ADDITIONS_DIRECTIVE = "package-additions"
NO_ADDITIONS = "No new names: this chapter adds nothing to the package."
# The words around the names, per edition of the book (tools/book/i18n.py); the names and their
# docstrings are the package's own, in English.
ADDITIONS_WORDS = {
    "en": {"in": "In {module}:", "constants": "Constants", "methods": "Methods", "none": NO_ADDITIONS},
    "zh_CN": {"in": "{module} 中：", "constants": "常量", "methods": "方法",
              "none": "没有新名称：本章没有向包中添加任何东西。"},
}


@dataclass
class Entry:
    kind: str  # "function", "class" or "data"
    name: str
    signature: str  # "(q: Tensor, ...) -> Tensor"; for data " = <value>"
    doc: str
    methods: list["Entry"]
    chapter: str
    section: str
    short: str = ""  # the parameters without annotations: "(q, k, v, mask=None)"


def _annotation(node: ast.expr | None) -> str:
    return f": {ast.unparse(node)}" if node is not None else ""


def format_arguments(args: ast.arguments, drop_first: bool = False, annotations: bool = True) -> str:
    """The parameter list of a `def`, written the way `inspect.signature` prints it."""
    if not annotations:  # the short form, which goes into link titles: no `<`, `>` or backticks there
        def elide(default: ast.expr | None) -> ast.expr | None:
            unsafe = default is not None and any(c in ast.unparse(default) for c in "<>`")
            return ast.Constant(...) if unsafe else default

        args = ast.arguments(
            posonlyargs=[ast.arg(a.arg) for a in args.posonlyargs], args=[ast.arg(a.arg) for a in args.args],
            vararg=args.vararg and ast.arg(args.vararg.arg), kwonlyargs=[ast.arg(a.arg) for a in args.kwonlyargs],
            kw_defaults=[elide(d) for d in args.kw_defaults], kwarg=args.kwarg and ast.arg(args.kwarg.arg),
            defaults=[elide(d) for d in args.defaults],
        )
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    parts: list[str] = []
    for index, (arg, default) in enumerate(zip(positional, defaults)):
        if drop_first and index == 0:
            continue
        text = arg.arg + _annotation(arg.annotation)
        if default is not None:
            text += (" = " if arg.annotation is not None else "=") + ast.unparse(default)
        parts.append(text)
        if args.posonlyargs and arg is args.posonlyargs[-1]:
            parts.append("/")
    if args.vararg is not None:
        parts.append("*" + args.vararg.arg + _annotation(args.vararg.annotation))
    elif args.kwonlyargs:
        parts.append("*")
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        text = arg.arg + _annotation(arg.annotation)
        if default is not None:
            text += (" = " if arg.annotation is not None else "=") + ast.unparse(default)
        parts.append(text)
    if args.kwarg is not None:
        parts.append("**" + args.kwarg.arg + _annotation(args.kwarg.annotation))
    return "(" + ", ".join(parts) + ")"


def _function_signature(node: ast.FunctionDef | ast.AsyncFunctionDef, method: bool = False) -> str:
    returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
    return format_arguments(node.args, drop_first=method) + returns


def entries_of(block: book.Block) -> list[Entry]:
    """The exported names of one block, in source order, with signatures and docstrings.

    The docstrings are read as the module has them (`block.body` is the exported text): those
    of functions and classes end with the `Taught in ...` line tools/export.py adds.
    """
    tree = ast.parse(block.body)
    found: list[Entry] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(Entry("function", node.name, _function_signature(node), ast.get_docstring(node) or "",
                               [], block.chapter, block.section, format_arguments(node.args, annotations=False)))
        elif isinstance(node, ast.ClassDef):
            init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
            signature = _function_signature(init, method=True).split(" -> ")[0] if init else "()"
            methods = [
                Entry("method", n.name, _function_signature(n, method=True), ast.get_docstring(n) or "",
                      [], block.chapter, block.section)
                for n in node.body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_")
            ]
            short = format_arguments(init.args, drop_first=True, annotations=False) if init else ""
            found.append(Entry("class", node.name, signature, ast.get_docstring(node) or "", methods,
                               block.chapter, block.section, short))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = ast.unparse(node.value) if node.value is not None else ""
            if len(value) > 60:
                value = value[:57] + "..."
            for target in targets:
                if isinstance(target, ast.Name):
                    found.append(Entry("data", target.id, f" = {value}", "", [], block.chapter, block.section))
    return found


def heading_anchors(text: str) -> list[tuple[int, int, str, str]]:
    """(line, level, heading text, anchor) of each heading of a MyST chapter, as the book renders it.

    The anchors are computed by MyST-Parser's own slug function, so they are the ones the HTML
    book has (with `myst_heading_anchors` covering every level). A chapter's text is parsed once
    (the reference asks for the headings of a chapter for each block it exports).
    """
    return list(_heading_anchors(text))


@functools.lru_cache(maxsize=64)
def _heading_anchors(text: str) -> tuple[tuple[int, int, str, str], ...]:
    from markdown_it.renderer import RendererHTML
    from markdown_it.tree import SyntaxTreeNode
    from myst_parser.config.main import MdParserConfig
    from myst_parser.mdit_to_docutils.base import compute_unique_slug
    from myst_parser.parsers.mdit import create_md_parser

    parser = create_md_parser(MdParserConfig(), RendererHTML)
    tree = SyntaxTreeNode(parser.parse(text))
    slugs: set[str] = set()
    headings = []
    for node in tree.walk():
        if node.type != "heading":
            continue
        slug = compute_unique_slug(node, slugs)
        slugs.add(slug)
        title = "".join(
            child.content for child in (node.children[0].children or []) if child.type in ("text", "code_inline")
        )
        headings.append((node.map[0] + 1, int(node.tag[1]), title, slug))
    return tuple(headings)


def section_link(root: Path, block: book.Block) -> tuple[str, str]:
    """(link text, target) of the section that teaches a block: `04_self_attention.md#the-module`."""
    headings = heading_anchors((root / block.chapter).read_text(encoding="utf-8"))
    before = [h for h in headings if h[0] < block.line]
    if not headings or not before:
        raise book.ExportError(f"{block.chapter}:{block.line}: exported cell sits under no heading")
    title = next((h[2] for h in headings if h[1] == 1), headings[0][2])
    section = before[-1]
    # Links are written relative to book/reference.md, which sits beside the chapters.
    target = Path(block.chapter).relative_to("book").as_posix() if block.chapter.startswith("book/") \
        else "../" + block.chapter
    text = title if section[2] == title else f"{title} › {section[2]}"
    return text, f"{target}#{section[3]}"


def _fence(content: str) -> str:
    longest = max((len(run) for run in re.findall(r"`{3,}", content)), default=0)
    return "`" * max(3, longest + 1)


def _directive(kind: str, title: str, options: dict[str, str], content: str) -> str:
    fence = _fence(content)
    lines = [f"{fence}{{py:{kind}}} {title}"]
    # Option values are read as YAML: quote them (JSON strings are YAML) so regexes and colons survive.
    lines += [f":{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in options.items()]
    lines += ["", content.rstrip(), fence] if content.strip() else [fence]
    return "\n".join(lines)


def render_entry(entry: Entry, module: str, link: tuple[str, str]) -> str:
    """One name as a Python-domain directive; its docstring's closing "Taught in ..." (added by
    tools/export.py) becomes a link, and a name without one (a constant) gets one."""
    paragraphs = [p for p in re.split(r"\n\s*\n", entry.doc.strip()) if p.strip()]
    taught = f"Taught in [{link[0]}]({link[1]})."
    if paragraphs and paragraphs[-1].startswith("Taught in"):
        taught = f"[{paragraphs.pop().strip().rstrip('.')}]({link[1]})."
    body = ["\n\n".join(paragraphs)] if paragraphs else []
    body.append(taught)
    for method in entry.methods:
        body.append(_directive("method", method.name + method.signature, {}, method.doc))
    if entry.kind == "data":
        return _directive("data", entry.name, {"module": module, "value": entry.signature[3:]}, "\n\n".join(body))
    return _directive(entry.kind, entry.name + entry.signature, {"module": module}, "\n\n".join(body))


def render(root: Path) -> str:
    """The Markdown of the package reference (without the page's title)."""
    modules = _collected(root)
    if not modules:
        return "No chapter exports anything yet.\n"
    out: list[str] = []
    for module in modules.values():
        out.append(f"## {module.name}")
        out.append(_directive("module", module.name, {}, ""))
        if module.docs:
            out.append("\n\n".join(module.docs))
        names = [name for block in module.blocks for name in block.names]
        out.append("Names: " + ", ".join(f"{{py:obj}}`~{module.name}.{name}`" for name in names) + ".")
        for block in module.blocks:
            link = section_link(root, block)
            for entry in entries_of(block):
                out.append(render_entry(entry, module.name, link))
    return "\n\n".join(out) + "\n"


def summary(doc: str) -> str:
    """The first paragraph of a docstring, on one line."""
    first = re.split(r"\n\s*\n", doc.strip())[0] if doc.strip() else ""
    return " ".join(first.split())


_COLLECTED: dict[tuple, dict[str, book.Module]] = {}


def _collected(root: Path) -> dict[str, book.Module]:
    """`book.collect(root)`, read again only when the toc or a chapter changed (a build asks per chapter)."""
    files = [root / "_toc.yml", *(root / chapter for chapter in book.toc_chapters(root))]
    key = (str(root.resolve()), *((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files if f.exists()))
    if key not in _COLLECTED:
        _COLLECTED.clear()
        _COLLECTED[key] = book.collect(root)
    return _COLLECTED[key]


def chapter_additions(root: Path, chapter: str, plain: bool = False, language: str = "en") -> str:
    """The names `chapter` adds to the package, as MyST Markdown linking to the reference.

    Per module the chapter feeds: a bullet per public function and class (its parameters, the
    first paragraph of its docstring, its public methods), then one for the constants. With
    `plain`, names are code spans instead of links (for notebooks, which have no reference).
    `language` chooses the words around the names (ADDITIONS_WORDS).
    """
    words = ADDITIONS_WORDS[language]

    def name(kind: str, title: str, target: str) -> str:
        return f"`{title}`" if plain else f"{{py:{kind}}}`{title} <{target}>`"

    out = []
    for module in _collected(root).values():
        entries = [
            entry for block in module.blocks if block.chapter == chapter
            for entry in entries_of(block) if not entry.name.startswith("_")
        ]
        if not entries:
            continue
        items = []
        for entry in entries:
            if entry.kind == "data":
                continue
            target = f"{module.name}.{entry.name}"
            kind = "func" if entry.kind == "function" else "class"
            item = f"- {name(kind, entry.name + entry.short, target)}: {summary(entry.doc)}".rstrip(": ")
            if entry.methods:
                methods = ", ".join(name("meth", m.name, f"{target}.{m.name}") for m in entry.methods)
                item += f" {words['methods']}: {methods}."
            items.append(item)
        constants = [name("data", e.name, f"{module.name}.{e.name}") for e in entries if e.kind == "data"]
        if constants:
            items.append(f"- {words['constants']}: " + ", ".join(constants) + ".")
        module_name = f"`{module.name}`" if plain else f"{{py:mod}}`{module.name}`"
        out.append(words["in"].format(module=module_name) + "\n\n" + "\n".join(items))
    return "\n\n".join(out) + "\n" if out else words["none"] + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        root = Path(__file__).resolve().parents[2]
        if args:
            sys.stdout.write(chapter_additions(root, args[0]))
            return 0
        sys.stdout.write(render(root))
    except book.ExportError as err:
        print(f"reference: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
