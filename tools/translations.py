"""The book's translated editions: build them, keep their catalogues in step, report coverage.

    python tools/translations.py build            # the Chinese edition, into _build/html/zh/
    python tools/translations.py update           # after an English edit: catalogues in step,
                                                  # and the messages that need translating
    python tools/translations.py update --start book/10_bert   # start translating a page
    python tools/translations.py check            # make check: every translated page's catalogue holds
                                                  # its English as it is now; typography; coverage
    python tools/translations.py coverage         # per page: translated / all
    python tools/translations.py typography       # spacing, punctuation, terms (make check)
    python tools/translations.py typography --fix locales/zh_CN/LC_MESSAGES/book/10_bert.po

A page is translated when its catalogue exists (`locales/zh_CN/LC_MESSAGES/<docname>.po`, see
tools/book/i18n.py); other pages of the edition show the English text, with one line saying so.

`build` reads the same sources with the same configuration as `make book`, with `language` set:
the notebooks' outputs come from the jupyter cache the English build filled
(`_build/.jupyter_cache`), so nothing is executed a second time; a notebook that is not in the
cache (the English build did not run it) makes the build fail instead of running it. Its
doctrees and MyST-NB's files go to `_build/zh/`, its report of messages that need translating
to `_build/zh/translation-report.json`.

`update` extracts the messages with Sphinx's gettext builder and the book's own configuration
(`_config.yml`: one catalogue per page, no locations, no uuids), then merges them into the
existing catalogues the way `sphinx-intl update` does (a changed message keeps its old
translation, marked fuzzy), and lists what needs translating. Catalogues of pages nobody
translates are not created. The extraction reads the pages without running them.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from book.i18n_catalogues import (Stale, compare, read_previous, stale_messages, with_previous,
                                  write_catalogue_text)

ROOT = Path(__file__).resolve().parent.parent
LINE_WIDTH = 76  # sphinx-intl's default: catalogues written by either tool look the same

# Each translated edition: its Sphinx language, where its site goes, its title, its search.
EDITIONS = {
    "zh_CN": {
        "site": "_build/html/zh",  # its site, inside the English one
        # where Sphinx builds it (then copied to the site): MyST-NB and the theme keep the
        # executed notebooks next to the HTML folder, so that folder cannot sit in the English site
        "outdir": "_build/zh/html",
        "workdir": "_build/zh",  # its doctrees, MyST-NB's files, the report
        "title": "从零实现 Transformer",
        "search_language": "zh",
        # MyST-NB's words on a folded cell ("Show code cell source")
        "show_code": "显示代码单元格",
        "hide_code": "隐藏代码单元格",
    },
}
DEFAULT_LANGUAGE = "zh_CN"
NOTEBOOKS = "_notebooks"  # where a site publishes its chapters' notebooks (book_site_notebooks_dir)


class TranslationError(Exception):
    """A problem a contributor can fix; the message says how."""


def cache_dir(root: Path) -> Path:
    """The English build's jupyter cache: the executed notebooks."""
    return root / "_build" / ".jupyter_cache"


def catalogue_dir(root: Path, language: str) -> Path:
    return root / "locales" / language / "LC_MESSAGES"


def catalogues(root: Path, language: str) -> dict[str, Path]:
    """The translated pages: docname -> catalogue."""
    folder = catalogue_dir(root, language)
    return {path.relative_to(folder).with_suffix("").as_posix(): path
            for path in sorted(folder.rglob("*.po"))}


def toc_docnames(root: Path) -> list[str]:
    """Every page of the book, in reading order."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    names = [toc["root"]]
    for part in toc.get("parts", []):
        names += [entry["file"] for entry in part.get("chapters", [])]
    names += [entry["file"] for entry in toc.get("chapters", [])]
    return names


def sphinx_build(root: Path, builder: str, outdir: Path, doctreedir: Path,
                 overrides: dict[str, object], strict: bool, quiet: bool = False) -> int:
    """`jupyter-book build`'s Sphinx run with extra configuration; Sphinx's status code."""
    from jupyter_book.sphinx import build_sphinx

    result = build_sphinx(
        root, outdir,
        noconfig=True,
        path_config=str(root / "_config.yml"),
        confoverrides={"external_toc_path": (root / "_toc.yml").as_posix(),
                       "latex_individualpages": False,
                       # the English build's cache: its executed notebooks, never run again here
                       "nb_execution_cache_path": str(cache_dir(root)),
                       **overrides},
        doctreedir=doctreedir,
        builder=builder,
        warningiserror=strict,
        keep_going=strict,
        quiet=quiet,
    )
    if isinstance(result, BaseException):
        raise TranslationError(f"the {builder} build failed: {result}")
    return int(result)


CJK = re.compile(r"[\u3400-\u9fff]")


def glossary_terms(root: Path, language: str) -> list[str]:
    """The edition's terms, from the second column of its glossary (`locales/<language>/GLOSSARY.md`)."""
    glossary = root / "locales" / language / "GLOSSARY.md"
    terms: list[str] = []
    if not glossary.is_file():
        return terms  # the search then splits words by jieba's own dictionary alone
    for line in glossary.read_text(encoding="utf-8").splitlines():
        if line.startswith("## ") and "不用的写法" in line:
            break  # the forms the edition does not use
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or len(cells) < 2 or cells[0] == "English":
            continue  # not a row of the table, or its header
        for term in re.split(r"\s*/\s*", cells[1]):
            term = re.sub(r"（.*?）", "", term).strip()
            if CJK.search(term) and " " not in term and term not in terms:
                terms.append(term)
    return terms


def write_search_dictionary(root: Path, language: str, path: Path) -> Path:
    """A jieba user dictionary of the glossary's terms, so that the search index keeps them
    whole ("自注意力", not only "自" and "注意力") and a reader's search for a term finds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(f"{term} 100000 n\n" for term in glossary_terms(root, language))
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)
    return path


def cache_records(root: Path) -> set[tuple[int, float]]:
    """The executed notebooks in the jupyter cache, by id and time."""
    if not cache_dir(root).exists():
        return set()
    from jupyter_cache import get_cache

    return {(record.pk, record.created.timestamp())
            for record in get_cache(cache_dir(root)).list_cache_records()}


def build(root: Path, language: str) -> int:
    """Build the translated edition; fail if it executed a notebook."""
    settings = EDITIONS[language]
    before = cache_records(root)
    if not before:
        raise TranslationError("no executed notebooks in _build/.jupyter_cache: "
                               "build the English edition first (make book)")
    started = time.monotonic()
    outdir = root / settings["outdir"]
    words = write_search_dictionary(root, language, root / settings["workdir"] / "search-words.txt")
    status = sphinx_build(root, "html", outdir, root / settings["workdir"] / ".doctrees", {
        "language": language,
        "html_search_language": settings["search_language"],
        "html_search_options": {"dict": str(words)},
        "html_title": settings["title"],
        "nb_code_prompt_show": settings["show_code"],
        "nb_code_prompt_hide": settings["hide_code"],
    }, strict=True)
    executed = cache_records(root) - before
    if executed:
        raise TranslationError(
            f"the {language} build executed {len(executed)} notebooks that the English build had not "
            "left in the cache: build the English edition first (make book), then this one")
    if status == 0:
        # An untranslated page's buttons open the English notebook (tools/book/site.py): a copy
        # an earlier build left here is not published again.
        translated = catalogues(root, language)
        for notebook in sorted((outdir / NOTEBOOKS).rglob("*.ipynb")):
            if notebook.relative_to(outdir / NOTEBOOKS).with_suffix("").as_posix() not in translated:
                notebook.unlink()
        shared = share_with_english(outdir, root / "_build" / "html", settings["site"])
        copied, removed = mirror(outdir, root / settings["site"], leave_out=shared)
        print(f"{language} edition: {settings['site']}/ in {time.monotonic() - started:.0f} s, "
              f"no notebook executed ({copied} files copied, {removed} removed, "
              f"{len(shared)} served from the English site's folders)")
    return status


# The folders whose files a translated edition shares with the English site when they are the
# same bytes: the theme, MathJax, ONNX Runtime and the exported models (_static), the figures
# (_images). The files of its own (the search's language data, the pages' language, a figure
# drawn with Chinese labels) stay in the edition's folders.
SHARED_FOLDERS = ("_static", "_images")
SHARED_REFERENCE = re.compile(r"(?<![\w./-])(?P<up>(?:\.\./)*)(?P<path>(?:%s)/[^\"'?#)\s<>]+)" % "|".join(SHARED_FOLDERS))


def share_with_english(outdir: Path, english: Path, site: str) -> set[Path]:
    """The files of a translated edition's build (`outdir`) that the English site (`english`)
    serves byte for byte in the same place: its pages are pointed at the English copies, one
    folder up (the edition's site is `site`, inside the English one), and the files are left out
    of the edition's site. Returns them, relative to `outdir`. Pages pointed once are left as
    they are, so that a page Sphinx did not write again is not pointed twice."""
    import filecmp

    shared = set()
    for folder in SHARED_FOLDERS:
        for path in sorted((outdir / folder).rglob("*")):
            relative = path.relative_to(outdir)
            other = english / relative
            if path.is_file() and other.is_file() and filecmp.cmp(path, other, shallow=False):
                shared.add(relative)
    if not shared:
        return shared
    up = "../" * len(Path(site).relative_to("_build/html").parts)
    names = {path.as_posix() for path in shared}
    for page in outdir.rglob("*.html"):
        depth = len(page.relative_to(outdir).parts) - 1
        text = page.read_text(encoding="utf-8")

        def point(match: re.Match) -> str:
            if len(match.group("up")) != 3 * depth or match.group("path") not in names:
                return match.group(0)  # not a path from this page to the edition's own folders
            return f"{match.group('up')}{up}{match.group('path')}"

        pointed = SHARED_REFERENCE.sub(point, text)
        if pointed != text:
            page.write_text(pointed, encoding="utf-8")
    return shared


def mirror(source: Path, target: Path, leave_out: set[Path] = frozenset()) -> tuple[int, int]:
    """Make the folder `target` a copy of `source`, copying only the files that differ, without
    the files `leave_out` (relative to `source`)."""
    import filecmp
    import shutil

    wanted = {path.relative_to(source) for path in source.rglob("*") if path.is_file()} - set(leave_out)



    copied = removed = 0
    for relative in sorted(wanted):
        destination = target / relative
        if destination.is_file() and filecmp.cmp(source / relative, destination, shallow=False):
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / relative, destination)
        copied += 1
    if target.exists():
        for path in sorted(target.rglob("*"), reverse=True):
            if path.is_file() and path.relative_to(target) not in wanted:
                path.unlink()
                removed += 1
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
    return copied, removed


@dataclass
class Coverage:
    docname: str
    total: int
    translated: int
    fuzzy: int

    @property
    def untranslated(self) -> int:
        return self.total - self.translated - self.fuzzy


def read_catalogue(path: Path):  # -> babel.messages.catalog.Catalog
    from babel.messages.pofile import read_po

    with path.open("rb") as handle:
        try:
            catalogue = read_po(handle, abort_invalid=True)
        except Exception as err:  # babel's PoFileError names the line
            raise TranslationError(f"{path}: not a valid catalogue: {err}") from err
    read_previous(catalogue)  # a fuzzy message's `#| msgid`: the English it was translated from
    return catalogue


def coverage(root: Path, language: str) -> list[Coverage]:
    found = []
    for docname, path in catalogues(root, language).items():
        entries = [message for message in read_catalogue(path) if message.id]
        found.append(Coverage(
            docname, len(entries),
            sum(1 for m in entries if m.string and not m.fuzzy),
            sum(1 for m in entries if m.fuzzy)))
    return found


def coverage_report(root: Path, language: str, needed: list[Stale] | None = None) -> str:
    """Per translated page: translated / messages; with `needed` (the messages that need
    translating, `stale`), the English the catalogue does not have yet counts too."""
    rows = coverage(root, language)
    if not rows:
        return f"{language}: no page translated yet"
    missing: dict[str, int] = {}
    for message in needed or []:
        if message.state == "missing":
            missing[message.docname] = missing.get(message.docname, 0) + 1
    lines = [f"{language} catalogues (locales/{language}/LC_MESSAGES/): translated / messages"]
    for row in rows:
        new = missing.get(row.docname, 0)
        total = row.total + new
        notes = [f"{new} new in the English page" if new else "",
                 f"{row.untranslated} untranslated" if row.untranslated else "",
                 f"{row.fuzzy} fuzzy" if row.fuzzy else ""]
        notes = [note for note in notes if note]
        state = f"  ({', '.join(notes)}: make translations lists them)" if notes else ""
        lines.append(f"  {row.docname:32s} {row.translated:4d} / {total:4d} "
                     f"{100 * row.translated / max(total, 1):5.1f}%{state}")
    untranslated_pages = [name for name in toc_docnames(root) if name not in {r.docname for r in rows}]
    if untranslated_pages:
        lines.append(f"  not translated (English text, one line saying so): {', '.join(untranslated_pages)}")
    return "\n".join(lines)


def typography_problems(root: Path, language: str, paths: list[Path] | None = None) -> list[str]:
    """Each place where a catalogue breaks the edition's typography or uses a form its glossary
    does not (tools/book/typography.py), as `file: rule: spot (msgid ...)`."""
    from book import typography

    terms = typography.read_terms(root / "locales" / language / "GLOSSARY.md")
    found = []
    for path in paths if paths is not None else catalogues(root, language).values():
        for message in read_catalogue(path):
            if not message.id or not message.string:
                continue
            for problem in typography.problems(message.string, terms):
                english = message.id if len(message.id) <= 60 else message.id[:57] + "..."
                found.append(f"{path.relative_to(root).as_posix()}: {problem.rule}: {problem.spot()} "
                             f"(msgid {english!r})")
    return found


def fix_typography(root: Path, paths: list[Path]) -> int:
    """Add and remove the spaces the typography asks for in these catalogues; the number of
    messages changed. Punctuation, numbers and terms are left to a person."""
    from book import typography

    changed = 0
    for path in paths:
        catalogue = read_catalogue(path)
        for message in catalogue:
            if message.id and message.string:
                fixed = typography.fix_spacing(message.string)
                if fixed != message.string:
                    message.string = fixed
                    changed += 1
        write_catalogue(path, catalogue)
    return changed


def extract(root: Path, quiet: bool = False) -> dict[str, Path]:
    """The messages of every page, as Sphinx's gettext builder extracts them: docname -> .pot.

    The pages are read without running them (the messages are the prose, not the outputs; the
    alt texts come from the cells' metadata, tools/book/i18n.py), against a jupyter cache of
    their own, so that the extraction takes seconds, needs no data, and never touches the
    English build's cache. Their glue roles find no data: those warnings are not shown."""
    pot_dir = root / "_build" / "gettext"
    status = sphinx_build(root, "gettext", pot_dir, root / "_build" / "gettext-doctrees", {
        "nb_execution_mode": "off",
        "nb_execution_cache_path": str(root / "_build" / "gettext-cache"),
        "suppress_warnings": ["mystnb.glue", "mystnb.glue_ref"],
    }, strict=False, quiet=quiet)
    if status:
        raise TranslationError("the gettext build failed (its messages are above)")
    return {path.relative_to(pot_dir).with_suffix("").as_posix(): path for path in sorted(pot_dir.rglob("*.pot"))}


def update(root: Path, language: str, start: list[str]) -> tuple[list[Stale], list[Path]]:
    """Merge the extracted messages into the catalogues (creating those in `start`): (every
    message that needs translating, the catalogues written). A catalogue is written only where
    its messages changed, and then only its changed entries: the others, and its header (its
    dates), stay as they were. A changed message keeps its old translation, marked fuzzy, with
    the English it was made for (`#| msgid`)."""
    from babel.messages.pofile import read_po

    unknown = [name for name in start if name not in toc_docnames(root)]
    if unknown:
        raise TranslationError(f"not pages of the book (_toc.yml): {', '.join(unknown)}")
    templates = extract(root)
    existing = catalogues(root, language)
    needed: list[Stale] = []
    written = []
    for docname in sorted(set(existing) | set(start)):
        if docname not in templates:
            raise TranslationError(f"{docname} has a catalogue but the book has no such page: "
                                   f"remove locales/{language}/LC_MESSAGES/{docname}.po")
        with open(templates[docname], "rb") as handle:
            template = read_po(handle)
        path = catalogue_dir(root, language) / f"{docname}.po"
        if path.exists():
            merged = read_catalogue(path)
            previous = {(m.context, m.id): m.previous_id for m in merged if m.id and m.fuzzy and m.previous_id}
            merged.update(template, update_creation_date=False)
            for message in merged:  # a message still fuzzy keeps the English it was translated from
                if message.id and message.fuzzy and not message.previous_id:
                    message.previous_id = previous.get((message.context, message.id), [])
        else:
            merged = template
            merged.locale = language
        if write_catalogue(path, merged):
            written.append(path)
        needed += compare(docname, template, merged)
    return needed, written


def write_catalogue(path: Path, merged) -> bool:
    """Write a catalogue atomically, in sphinx-intl's layout, obsolete messages dropped, fuzzy ones
    with their previous English; the entries that did not change keep their text. Whether the
    file changed."""
    from babel.messages.pofile import write_po

    buffer = io.BytesIO()
    write_po(buffer, merged, width=LINE_WIDTH, ignore_obsolete=True, include_previous=False)
    old = path.read_text(encoding="utf-8") if path.exists() else None
    text = write_catalogue_text(old, with_previous(buffer.getvalue().decode("utf-8"), merged))
    if text == old:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".po.tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)
    return True


def stale(root: Path, language: str) -> list[Stale]:
    """Every message of a translated page that needs translating (the page's English changed since
    its catalogue, or the catalogue is unfinished), extracting only pages that changed."""
    return stale_messages(root, catalogues(root, language), lambda here: extract(here, quiet=True),
                          read_catalogue)


def listing(root: Path, language: str, needed: list[Stale]) -> list[str]:
    """The messages that need translating, each whole (a changed one as a word diff against the
    English its translation was made for), under its catalogue."""
    return [message.describe(f"locales/{language}/LC_MESSAGES/{message.docname}.po") for message in needed]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--language", default=DEFAULT_LANGUAGE, choices=sorted(EDITIONS))
    parser.add_argument("--root", type=Path, default=ROOT, help="the book's folder (default: this repository)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help="build the translated edition from the English build's executed notebooks")
    updating = commands.add_parser("update", help="bring the catalogues in step with the English pages")
    updating.add_argument("--start", nargs="*", default=[], metavar="DOCNAME",
                          help="create the catalogues of these pages (book/10_bert)")
    commands.add_parser("check", help="fail when a translated page's English changed since its catalogue, or "
                                      "a catalogue breaks the typography (make check); the coverage of each page")
    checking = commands.add_parser("coverage", help="how much of each translated page is translated")
    checking.add_argument("--strict", action="store_true",
                          help="fail when a translated page has an untranslated or fuzzy message")
    typesetting = commands.add_parser(
        "typography", help="check every catalogue against the edition's typography and glossary")
    typesetting.add_argument("--fix", nargs="+", type=Path, metavar="FILE.po",
                             help="add and remove spaces in these catalogues first")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if args.command == "update":
        unknown = [name for name in args.start if name not in toc_docnames(root)]
        if unknown:  # refused before anything is extracted or written
            parser.error(f"argument --start: not pages of the book (_toc.yml): {', '.join(unknown)}")
    try:
        if args.command == "build":
            return build(root, args.language)
        if args.command == "update":
            needed, written = update(root, args.language, args.start)
            for path in written:
                print(f"wrote {path.relative_to(root).as_posix()}")
            print("\n".join(f"  {line}" for line in listing(root, args.language, needed)))
            print(coverage_report(root, args.language))
            print(f"{len(needed)} messages need translating" if needed else "every message is translated")
            return 0
        if args.command == "check":
            needed = stale(root, args.language)
            print(coverage_report(root, args.language, needed))
            found = typography_problems(root, args.language)
            print("\n".join(found) if found else
                  f"{args.language} catalogues: typography and terms as locales/{args.language}/GLOSSARY.md says")
            if needed:
                print(f"translations: {len(needed)} message{'s' * (len(needed) != 1)} of translated pages need "
                      "translating (each page's catalogue must hold its English as it is now; `make translations` "
                      "updates the catalogues, then translate each message and delete its `#, fuzzy` line):",
                      file=sys.stderr)
                for line in listing(root, args.language, needed):
                    print(f"  {line}", file=sys.stderr)
            return 1 if needed or found else 0
        if args.command == "typography":
            if args.fix:
                paths = [path.resolve() for path in args.fix]
                print(f"{fix_typography(root, paths)} messages re-spaced")
            found = typography_problems(root, args.language)
            print("\n".join(found) if found else
                  f"{args.language} catalogues: typography and terms as locales/{args.language}/GLOSSARY.md says")
            return 1 if found else 0
        print(coverage_report(root, args.language))
        incomplete = [row for row in coverage(root, args.language) if row.translated != row.total]
        return 1 if args.strict and incomplete else 0
    except TranslationError as err:
        print(f"translations: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
