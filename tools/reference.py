"""Write the book's package reference: every exported name, from the chapters themselves.

The reference is built from what `tools/export.py` collects, so it lists exactly what the
package contains: for each module its docstring, then each exported function, class and
constant with its signature, its docstring (and a class's public methods), and a link to the
section of the chapter that teaches it. The text is MyST Markdown using Sphinx's Python
domain, so names get index entries, appear in the page's contents, and chapters can link to
them: {py:func}`~scratchformer.attention.scaled_dot_product_attention`,
{py:class}`~scratchformer.attention.SelfAttention`, {py:mod}`scratchformer.attention`.

    python tools/reference.py    # print the generated Markdown

The book build (tools/book_site.py) inserts this text into `book/reference.md` at read
time; nothing generated is committed.

What this deliberately does not handle: names defined by other means than a top-level
`def`, `class` or assignment, nested classes, and properties (they are listed as methods).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export  # noqa: E402

MARKER = "<!-- package-reference -->"


@dataclass
class Entry:
    kind: str  # "function", "class" or "data"
    name: str
    signature: str  # "(q: Tensor, ...) -> Tensor"; for data " = <value>"
    doc: str
    methods: list["Entry"]
    chapter: str
    section: str


def _annotation(node: ast.expr | None) -> str:
    return f": {ast.unparse(node)}" if node is not None else ""


def format_arguments(args: ast.arguments, drop_first: bool = False) -> str:
    """The parameter list of a `def`, written the way `inspect.signature` prints it."""
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


def entries_of(block: export.Block) -> list[Entry]:
    """The exported names of one block, in source order, with signatures and docstrings."""
    tree = ast.parse(block.body)
    found: list[Entry] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(Entry("function", node.name, _function_signature(node), ast.get_docstring(node) or "",
                               [], block.chapter, block.section))
        elif isinstance(node, ast.ClassDef):
            init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
            signature = _function_signature(init, method=True).split(" -> ")[0] if init else "()"
            methods = [
                Entry("method", n.name, _function_signature(n, method=True), ast.get_docstring(n) or "",
                      [], block.chapter, block.section)
                for n in node.body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_")
            ]
            found.append(Entry("class", node.name, signature, ast.get_docstring(node) or "", methods,
                               block.chapter, block.section))
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
    book has (with `myst_heading_anchors` covering every level).
    """
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
    return headings


def section_link(root: Path, block: export.Block) -> tuple[str, str]:
    """(link text, target) of the section that teaches a block: `04_self_attention.md#the-module`."""
    headings = heading_anchors((root / block.chapter).read_text(encoding="utf-8"))
    before = [h for h in headings if h[0] < block.line]
    if not headings or not before:
        raise export.ExportError(f"{block.chapter}:{block.line}: exported cell sits under no heading")
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
    """One name as a Python-domain directive; its docstring's closing "Taught in ..." becomes a link."""
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
    modules = export.collect(root)
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


def main() -> int:
    try:
        sys.stdout.write(render(Path(__file__).resolve().parent.parent))
    except export.ExportError as err:
        print(f"reference: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
