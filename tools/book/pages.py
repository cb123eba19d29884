"""Files beside the chapters the book would ignore: unlisted pages, a leftover notebook pairing.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from book.chapters import unlisted_markdown
from book.sync import JUPYTEXT


def excluded_patterns(root: Path) -> list[str]:
    config = root / "_config.yml"
    if not config.is_file():
        return []
    return list((yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get("exclude_patterns", []) or [])


def is_excluded(path: str, patterns: list[str]) -> bool:
    """Whether Sphinx's `exclude_patterns` (as `_config.yml` gives them) leave out `path`."""
    try:
        from sphinx.util.matching import Matcher
    except ImportError:  # without Sphinx: its patterns read as shell patterns, `**` included
        import fnmatch
        return any(fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(path, pattern + "/*")
                   for pattern in patterns)
    return Matcher(patterns)(path)


def stray_pages(root: Path, listed: list[str]) -> list[str]:
    """Markdown files among the chapters that `_toc.yml` does not list and `_config.yml` does not exclude.

    The book builds only the files the toc lists (`only_build_toc_files`), so such a file is
    neither published nor exported: say so rather than ignore it.
    """
    patterns = excluded_patterns(root)
    problems = []
    for path in unlisted_markdown(root, listed):
        rel = path.relative_to(root).as_posix()
        if is_excluded(rel, patterns):
            continue
        problems.append(
            f"{rel}: a Markdown file beside the chapters that _toc.yml does not list, so the book "
            "neither shows nor exports it: add it to _toc.yml, add it to `exclude_patterns` in "
            "_config.yml (notes that are not pages), or move it out of the book's folders"
        )
    return problems


def leftover_pairings(root: Path, chapters: list[str]) -> list[str]:
    """Chapters whose front matter still pairs them with a notebook (`formats:`)."""
    problems = []
    for chapter in chapters:
        path = root / chapter
        if not path.is_file():
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), 0)
        for number in range(1, end):
            if re.match(r"^\s+formats:", lines[number]):
                problems.append(
                    f"{chapter}:{number + 1}: `{lines[number].strip()}` pairs the chapter with a notebook "
                    f"(`jupytext --set-formats`): remove the line before committing (`{JUPYTEXT} "
                    f"--update-metadata '{{\"jupytext\": {{\"formats\": null}}}}' {chapter}`, or delete it "
                    "by hand)"
                )
    return problems


CONFLICT_LINE = re.compile(r"^(<{7} |={7}$|>{7} )")


def conflict_markers(root: Path, chapters: list[str]) -> list[str]:
    """Chapters that still hold merge conflict markers (`--merge-notebook`, or git's own)."""
    problems = []
    for chapter in chapters:
        path = root / chapter
        if not path.is_file():
            continue
        found = [number for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1)
                 if CONFLICT_LINE.match(line)]
        if found:
            problems.append(f"{chapter}:{found[0]}: a merge conflict marker (lines "
                            f"{', '.join(map(str, found))}): keep what you want of each version, then delete "
                            "the `<<<<<<<`, `=======` and `>>>>>>>` lines")
    return problems
