"""A chapter saved from Jupyter keeps its own text wherever its content did not change.

Jupyter, with jupytext, saves a chapter (`book/NN_topic.md`, opened as a notebook) by writing
the whole text anew in jupytext's style: the front matter's keys in another order and
`export_doc:` re-wrapped, tags quoted (`['export:scratchformer.data.imdb']`), blank lines
moved. None of that changes the chapter, and all of it would be a line of `git diff`. Before
Jupyter writes the file, `keep_chapter_text` (a `pre_save_hook` of Jupyter's contents manager,
which `make venv` configures in `.venv/etc/jupyter/jupyter_server_config.d/scratchbook.json`)
puts back the chapter's own text of every part whose content is the same: the front matter
(key by key), and each run of lines whose change jupytext reads as no change. An edit made in
Jupyter is written as jupytext writes it.

`keep_unchanged_text(old, new)` is the same for any two texts of a chapter; the exporter's
`--merge-notebook` writes a merged chapter through it too.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

KEY = re.compile(r"^[A-Za-z_][\w-]*:")


def split_front_matter(text: str) -> tuple[str, str]:
    """(the front matter with its `---` lines, the rest); ("", text) when there is none."""
    if not text.startswith("---\n"):
        return "", text
    end = text.find("\n---\n", 3)
    if end < 0:
        return "", text
    return text[:end + 5], text[end + 5:]


def key_blocks(front: str) -> dict[str, str]:
    """Each top-level key of a front matter -> its lines (the key's line and its indented ones)."""
    blocks: dict[str, list[str]] = {}
    current = None
    for line in front.split("\n")[1:-2]:  # without the `---` lines
        if KEY.match(line):
            current = line.split(":", 1)[0]
            blocks[current] = [line]
        elif current is not None:
            blocks[current].append(line)
    return {key: "\n".join(lines) for key, lines in blocks.items()}


# What jupytext writes into a chapter's front matter from jupytext.toml, which says it already.
OWN_SETTINGS = ("notebook_metadata_filter", "cell_metadata_filter")


def without_own_settings(old: dict, new: dict) -> dict:
    """`new` without the `jupytext:` settings jupytext copies in from jupytext.toml, where `old`
    (the chapter as it was) does not have them."""
    settings = new.get("jupytext")
    if not isinstance(settings, dict):
        return new
    kept = {key: value for key, value in settings.items()
            if key not in OWN_SETTINGS or key in (old.get("jupytext") or {})}
    return {**new, "jupytext": kept}


def keep_front_matter(old: str, new: str) -> str:
    """`new`'s front matter written as `old` writes it: each key whose value did not change keeps
    its text and place; a changed or new key is written as in `new`."""
    import yaml

    try:
        old_data, new_data = yaml.safe_load(old[4:-5]) or {}, yaml.safe_load(new[4:-5]) or {}
    except yaml.YAMLError:
        return new
    if without_own_settings(old_data, new_data) == old_data:
        return old
    old_blocks, new_blocks = key_blocks(old), key_blocks(new)
    if set(old_blocks) != set(old_data) or set(new_blocks) != set(new_data):
        return new  # keys this reading does not see: leave it to jupytext
    lines = [old_blocks[key] if old_data.get(key) == new_data[key] else new_blocks[key]
             for key in old_blocks if key in new_data]
    lines += [new_blocks[key] for key in new_blocks if key not in old_data]
    text = "---\n" + "\n".join(lines) + "\n---\n"
    return text if yaml.safe_load(text[4:-5]) == new_data else new


def notebook_of(text: str):
    """What jupytext reads in a chapter: its metadata, and each cell's type, source and options."""
    import jupytext

    notebook = jupytext.reads(text, fmt="md:myst")
    metadata = {key: value for key, value in notebook.metadata.items() if key not in ("jupytext", "kernelspec")}
    return (metadata, [(c.cell_type, c.source, c.metadata) for c in notebook.cells])


def keep_unchanged_text(old: str, new: str) -> str:
    """`new`, with every part whose content is the same as in `old` written as `old` writes it."""
    old_front, old_rest = split_front_matter(old)
    new_front, new_rest = split_front_matter(new)
    if old_front and new_front:
        front = keep_front_matter(old_front, new_front)
    elif new_front and set(key_blocks(new_front)) <= {"jupytext", "kernelspec"}:
        front = ""  # a page without front matter, to which jupytext gave its own
    else:
        front = new_front
    try:
        wanted = notebook_of(new)
    except Exception:  # noqa: BLE001 (not a chapter jupytext reads: nothing to compare)
        return new
    if notebook_of(front + old_rest) == wanted:
        return front + old_rest
    before, after = old_rest.split("\n"), new_rest.split("\n")
    hunks = [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in
             difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes() if tag != "equal"]

    def text_with(reverted: set[int]) -> str:
        lines, at = [], 0
        for index, (i1, i2, j1, j2) in enumerate(hunks):
            lines += after[at:j1] + (before[i1:i2] if index in reverted else after[j1:j2])
            at = j2
        return front + "\n".join(lines + after[at:])

    kept = {index for index in range(len(hunks)) if notebook_of(text_with({index})) == wanted}
    if kept and notebook_of(text_with(kept)) == wanted:
        return text_with(kept)
    return front + new_rest


def keep_chapter_text(model: dict, path: str, contents_manager, **kwargs) -> None:
    """Jupyter's `pre_save_hook`: a chapter (`.md`) saved as text keeps its own text wherever its
    content did not change. Anything else is saved as it comes."""
    if model.get("type") != "file" or model.get("format") != "text" or not str(path).endswith(".md"):
        return
    try:
        os_path = Path(contents_manager._get_os_path(path))
    except Exception:  # noqa: BLE001 (a contents manager without files on disk)
        return
    if not os_path.is_file() or not isinstance(model.get("content"), str):
        return
    model["content"] = keep_unchanged_text(os_path.read_text(encoding="utf-8"), model["content"])
