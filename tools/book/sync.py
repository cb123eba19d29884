"""Notebooks beside the chapters (`book/NN_topic.ipynb`): in step, stale, or holding edits.

The book and the exporter read only the chapter (`.md`). A notebook beside it is compared with
it cell by cell (front matter, each cell's type, source and options); where they differ, the
chapter's history in git (`book.merge`) tells whose edits are whose:

- "notebook": the notebook holds edits the chapter lacks, and every edit of the chapter;
- "chapter": the chapter changed and the notebook holds nothing it lacks (it is stale);
- "both": each holds edits the other lacks;
- "unknown": git has no version of the chapter, so whose edits are whose cannot be told.

Every command this module advises keeps both sides' edits: `--merge-notebook` writes the
chapter from a three-way merge of the cells (cells both sides changed differently go into the
chapter between conflict markers, both versions kept) and brings the notebook in step with it;
`rm` and `jupytext --to ipynb --update` are advised only for a notebook that holds nothing the
chapter lacks. `jupytext --sync` is never advised: it picks a side by file time.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path

import jupytext
import nbformat

from book.cells import ExportError, read_myst
from book.files import write_atomic
from book.merge import Cell, Conflict, closest_base, git_versions, merge

JUPYTEXT = ".venv/bin/jupytext"
MERGE_COMMAND = ".venv/bin/python tools/export.py --merge-notebook"
# Options Jupyter adds to a cell as it runs it, which are not the chapter's.
RUN_METADATA = ("execution", "ExecuteTime", "collapsed", "scrolled", "trusted", "editable", "deletable")
# Front-matter keys that are the notebook file's own, not the chapter's.
OWN_METADATA = ("jupytext", "kernelspec", "language_info", "widgets", "scratchbook")
# Where --merge-notebook keeps, in a notebook it left conflict markers in, the chapter it wrote:
# the base that tells a resolution of the markers in the chapter from an edit of the notebook.
MERGED = "merged_chapter"
CONFLICT_START = "<<<<<<< the chapter's version ({})"
CONFLICT_MIDDLE = "======="
CONFLICT_END = ">>>>>>> the notebook's version ({})"
DIFF_LINES = 40  # lines of each side's diff shown in a message


def notebook_cells(notebook) -> list[Cell]:
    """What a chapter and its notebook must agree on: the front matter, then each cell."""
    front = {k: v for k, v in notebook.metadata.items() if k not in OWN_METADATA}
    cells: list[Cell] = [("front matter", json.dumps(front, sort_keys=True, ensure_ascii=False), (), "")]
    for cell in notebook.cells:
        options = {k: v for k, v in cell.metadata.items() if k not in RUN_METADATA and k != "tags"}
        tags = tuple(cell.metadata.get("tags", [])) if cell.cell_type == "code" else ()
        cells.append((cell.cell_type, cell.source.strip(), tags, json.dumps(options, sort_keys=True)))
    return cells


@dataclass
class Pair:
    """A chapter and the notebook beside it, compared."""

    chapter: str
    state: str | None  # None (in step), "notebook", "chapter", "both" or "unknown"
    base_where: str = ""
    base: list[Cell] = field(default_factory=list)
    ours: list[Cell] = field(default_factory=list)  # the chapter's cells
    theirs: list[Cell] = field(default_factory=list)  # the notebook's
    merged: list[Cell] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)

    @property
    def notebook(self) -> str:
        return Path(self.chapter).with_suffix(".ipynb").as_posix()


def common_cells(ours: list[Cell], theirs: list[Cell]) -> list[Cell]:
    """The cells both versions share, in order: a base that takes every cell of either side."""
    matcher = difflib.SequenceMatcher(None, ours, theirs, autojunk=False)
    return [cell for a, _, size in matcher.get_matching_blocks() for cell in ours[a:a + size]]


def compare(root: Path, chapter: str) -> Pair | None:
    """The chapter and its notebook compared (None when there is no notebook beside it)."""
    md = root / chapter
    ipynb = md.with_suffix(".ipynb")
    if not ipynb.is_file() or not md.is_file():
        return None
    ours = notebook_cells(read_myst(md.read_text(encoding="utf-8"), chapter))
    try:
        theirs = notebook_cells(jupytext.read(ipynb))
    except Exception as err:  # not a readable notebook: nothing can be merged from it
        raise ExportError(f"{ipynb.relative_to(root).as_posix()}: not a notebook jupytext can read "
                          f"({type(err).__name__}: {err}); move it away and compare it with {chapter} by hand")
    if ours == theirs:
        return Pair(chapter, None)
    versions = []
    merged = merged_chapter(ipynb)
    if merged:
        versions.append(("the chapter as --merge-notebook wrote it, conflict markers included",
                         notebook_cells(read_myst(merged, chapter))))
    marked = any(cell[1].startswith(CONFLICT_START.split("(")[0]) for cell in ours + theirs)
    if not (merged and marked):  # while one side holds the merge's markers, the merge is the base
        for where, text in git_versions(root, chapter):
            try:
                versions.append((where, notebook_cells(read_myst(text, chapter))))
            except ExportError:
                continue
    found = closest_base(versions, theirs)
    where, base = found if found else ("", common_cells(ours, theirs))
    merged, conflicts = merge(base, ours, theirs)
    if not found:
        state = "unknown"
    elif not conflicts and merged == theirs:
        state = "notebook"
    elif not conflicts and merged == ours:
        state = "chapter"
    else:
        state = "both"
    return Pair(chapter, state, where, base, ours, theirs, merged, conflicts)


def merged_chapter(ipynb: Path) -> str | None:
    """The chapter text --merge-notebook wrote with conflict markers, as the notebook beside it keeps it."""
    try:
        with ipynb.open(encoding="utf-8") as handle:
            metadata = json.load(handle).get("metadata", {})
    except (OSError, ValueError):
        return None
    merged = (metadata.get("scratchbook") or {}).get(MERGED)
    return merged if isinstance(merged, str) else None


def remember_merge(ipynb: Path, text: str | None) -> None:
    """Keep (or, with None, forget) in the notebook's metadata the chapter a merge wrote."""
    notebook = jupytext.read(ipynb)
    own = dict(notebook.metadata.get("scratchbook") or {})
    own.pop(MERGED, None)
    if text is not None:
        own[MERGED] = text
    if own:
        notebook.metadata["scratchbook"] = own
    else:
        notebook.metadata.pop("scratchbook", None)
    jupytext.write(notebook, ipynb)


def notebook_state(root: Path, chapter: str) -> str | None:
    """None (no notebook, or in step with the chapter), "notebook", "chapter", "both" or "unknown"."""
    pair = compare(root, chapter)
    return pair.state if pair else None


def cells_text(cells: list[Cell]) -> list[str]:
    """Cells as lines a reader can compare (a diff of two versions)."""
    lines = []
    for kind, source, tags, options in cells:
        head = f"[{kind}" + (f", tags {list(tags)}" if tags else "") + (
            f", options {options}" if options not in ("", "{}") else "") + "]"
        lines += [head, *source.split("\n"), ""]
    return lines


def side_diff(pair: Pair, cells: list[Cell], name: str) -> list[str]:
    """The changes of one side against the base, as an indented unified diff (shortened)."""
    diff = list(difflib.unified_diff(cells_text(pair.base), cells_text(cells), lineterm="", n=1,
                                     fromfile=pair.base_where or "the cells both share", tofile=name))
    shown = diff[2:DIFF_LINES + 2]
    if len(diff) > DIFF_LINES + 2:
        shown.append(f"... ({len(diff) - DIFF_LINES - 2} more lines)")
    return ["    " + line for line in shown]


def notebook_problem(root: Path, pair: Pair) -> str:
    """What is wrong with the notebook beside a chapter, and the command that resolves it."""
    chapter, ipynb = pair.chapter, pair.notebook
    merge_it = f"`{MERGE_COMMAND} {ipynb}`"
    if pair.state == "chapter":
        return (f"{ipynb}: the notebook is stale: {chapter} changed since it was made (from {pair.base_where}) "
                "and the notebook holds nothing the chapter lacks. Saving it from an open Jupyter (or "
                "a jupytext sync) would write its old text over the chapter: delete it (`rm "
                f"{ipynb}`) or bring it up to date (`{JUPYTEXT} --to ipynb --update {chapter}`)")
    if pair.state == "notebook":
        return (f"{ipynb}: the notebook holds edits that {chapter} lacks (and every edit of the chapter, "
                f"compared with {pair.base_where}); the book and the exporter read only {chapter}: "
                f"carry them into the chapter with {merge_it}, then delete the notebook (`rm {ipynb}`) "
                "or keep working in it\n" + "\n".join(side_diff(pair, pair.theirs, ipynb)))
    if pair.state == "unknown":
        head = (f"{ipynb}: the notebook and {chapter} differ, and git holds no version of the chapter to "
                "tell whose edits are whose, so neither may be written over the other. "
                f"{merge_it} writes into the chapter every cell of both (a cell one side deleted "
                "comes back; cells that differ are both kept, between conflict markers)")
    else:
        head = (f"{ipynb}: both the notebook and {chapter} changed since {pair.base_where}: writing either "
                "over the other (as jupytext's --to myst, --to ipynb or --sync would) would lose the other's "
                f"edits. Merge them with {merge_it}: it writes into the chapter the edits of both")
        if pair.conflicts:
            head += (f", and where both changed the same cells ({len(pair.conflicts)} place"
                     f"{'s' * (len(pair.conflicts) != 1)}) both versions, between conflict markers "
                     "(`<<<<<<<`, `=======`, `>>>>>>>`) for you to resolve in the chapter")
        head += "; the notebook is then brought in step with the chapter"
    return "\n".join([head, f"  the chapter's changes ({chapter}):", *side_diff(pair, pair.ours, chapter),
                      f"  the notebook's changes ({ipynb}):", *side_diff(pair, pair.theirs, ipynb)])


def stale_notebooks(root: Path, chapters: list[str],
                    states: tuple[str, ...] = ("notebook", "chapter", "both", "unknown")) -> list[str]:
    """One message per chapter whose notebook is out of step with it (in `states`)."""
    problems = []
    for chapter in chapters:
        try:
            pair = compare(root, chapter)
        except ExportError as err:
            problems.append(str(err))
            continue
        if pair and pair.state in states:
            problems.append(notebook_problem(root, pair))
    return problems


def as_notebook_cell(cell: Cell) -> nbformat.NotebookNode:
    kind, source, tags, options = cell
    metadata = json.loads(options) if options else {}
    if tags:
        metadata["tags"] = list(tags)
    if kind == "code":
        return nbformat.v4.new_code_cell(source, metadata=metadata)
    if kind == "raw":
        return nbformat.v4.new_raw_cell(source, metadata=metadata)
    return nbformat.v4.new_markdown_cell(source, metadata=metadata)


def merged_cells(pair: Pair) -> list[Cell]:
    """The merge, with both versions of each conflict between marker cells."""
    def marked(conflict: Conflict) -> list[Cell]:
        return [("markdown", CONFLICT_START.format(pair.chapter), (), "{}"), *conflict.chapter,
                ("markdown", CONFLICT_MIDDLE, (), "{}"), *conflict.notebook,
                ("markdown", CONFLICT_END.format(pair.notebook), (), "{}")]

    return merge(pair.base, pair.ours, pair.theirs, marked)[0]


def update_notebook(root: Path, chapter: str) -> bool:
    """Write the chapter's text into the notebook beside it, keeping its outputs."""
    ipynb = (root / chapter).with_suffix(".ipynb")
    if not ipynb.is_file():
        return False
    from jupytext.combine import combine_inputs_with_outputs

    fresh = read_myst((root / chapter).read_text(encoding="utf-8"), chapter)
    combine_inputs_with_outputs(fresh, jupytext.read(ipynb), fmt="md:myst")
    jupytext.write(fresh, ipynb)
    return True


def chapter_text(root: Path, chapter: str, cells: list[Cell]) -> str:
    """The chapter's text holding `cells` (the first is its front matter), as jupytext writes it."""
    from jupytext.config import find_jupytext_configuration_file, load_jupytext_configuration_file

    if cells[0][0] != "front matter":
        raise ExportError(f"{chapter}: the front matter changed on both sides, differently: make the "
                          "chapter's and the notebook's front matter agree by hand, then merge again")
    current = read_myst((root / chapter).read_text(encoding="utf-8"), chapter)
    notebook = nbformat.v4.new_notebook()
    notebook.metadata.update({k: v for k, v in current.metadata.items() if k in OWN_METADATA})
    notebook.metadata.update(json.loads(cells[0][1]))
    notebook.cells = [as_notebook_cell(cell) for cell in cells[1:]]
    found = find_jupytext_configuration_file(str((root / chapter).parent))
    config = load_jupytext_configuration_file(found) if found else None
    text = jupytext.writes(notebook, fmt="md:myst", config=config)
    original = (root / chapter).read_text(encoding="utf-8")
    if cells[0] == notebook_cells(current)[0] and original.startswith("---\n") and text.startswith("---\n"):
        # The front matter did not change: keep the chapter's own (jupytext without this book's
        # jupytext.toml would even drop its `export:` keys).
        text = original[:original.index("\n---\n", 3) + 5] + text[text.index("\n---\n", 3) + 5:]
    # Wherever else the merge changed nothing (a cell's options, blank lines), the chapter keeps
    # its own text, not jupytext's restyling of it.
    from scratchbook.notebook_saves import keep_unchanged_text

    return keep_unchanged_text(original, text)


def merge_notebook(root: Path, notebook: str) -> list[str]:
    """`--merge-notebook`: write into a chapter the edits of both it and the notebook beside it.

    The chapter is written only when reading it back gives exactly the merged cells; the
    notebook is then brought in step with it (its outputs kept). Returns what was done.
    """
    path = (root / notebook).resolve() if not Path(notebook).is_absolute() else Path(notebook)
    try:
        chapter = path.with_suffix(".md").relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ExportError(f"{notebook}: not a notebook of this book (under {root})") from None
    if path.suffix != ".ipynb" or not (root / chapter).is_file() or not path.is_file():
        raise ExportError(f"{notebook}: give the notebook beside a chapter (book/NN_topic.ipynb)")
    from book.pages import conflict_markers

    pair = compare(root, chapter)
    if pair is None or pair.state is None:
        return [f"{chapter} and {pair.notebook if pair else notebook} are in step: nothing to merge"]
    unresolved = conflict_markers(root, [chapter])
    if unresolved and pair.state in ("both", "unknown"):
        raise ExportError(f"{unresolved[0]}. Resolve those in the chapter first (or in the notebook, and "
                          "leave the chapter as the merge wrote it): merging both again would put markers "
                          "inside markers. `make check` then says what, if anything, is left to carry over.")
    cells = merged_cells(pair)
    text = chapter_text(root, chapter, cells)
    if notebook_cells(read_myst(text, chapter)) != cells:
        raise ExportError(f"{chapter}: the merged chapter does not read back as the merged cells, so it "
                          f"was not written: merge by hand (the chapter's and the notebook's changes: "
                          f"`.venv/bin/python tools/export.py --check`)")
    if pair.state != "chapter":
        write_atomic(root / chapter, text)
    update_notebook(root, chapter)
    remember_merge(path, text if pair.conflicts else None)
    done = [f"{chapter}: written with the edits of both it and {pair.notebook}"
            if pair.state != "chapter" else f"{chapter}: unchanged (the notebook held nothing it lacks)",
            f"{pair.notebook}: brought in step with {chapter} (outputs kept)"]
    if pair.conflicts:
        done.append(f"{chapter}: {len(pair.conflicts)} place{'s' * (len(pair.conflicts) != 1)} where both "
                    "changed the same cells hold both versions between `<<<<<<<` and `>>>>>>>`: keep what "
                    "you want of each and delete the markers (`make check` names them until you do)")
    return done
