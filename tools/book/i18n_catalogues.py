"""The translated pages' catalogues against their English pages: fresh or stale, and written
without churn.

A translated page is fresh when every message its English page has today is in its catalogue,
translated and not fuzzy. `stale_messages` tells, naming the page and the message; `make check`
runs it. Knowing a page's messages takes Sphinx's gettext extraction (seconds of CPU), so what
was found for each page is remembered in `_build/gettext/catalogues.json`, with a fingerprint of
what its messages are made of (the page's text without its code, the names its closing list
shows, the toc and the configuration) and of the catalogue: a page whose text and catalogue did
not change since is not extracted again. Editing a code cell that changes no message (no docstring, no
signature in the closing list) costs nothing; a fresh clone extracts once.

`write_catalogue_text` writes a merged catalogue keeping the text of every entry that did not
change as it was (its wrapping, its place), and the header as it was: `make translations`
rewrites only the entries whose English changed, and no file whose messages did not.
"""

from __future__ import annotations

import difflib
import hashlib
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

FRESH = Path("_build") / "gettext" / "catalogues.json"  # what was found, by fingerprint
CODE_CELL = re.compile(r"^(`{3,}|~{3,})\{code-cell\}")
# What else the messages of a page are made of: the toc (its captions), the configuration (the
# MyST extensions that parse the text), the bibliography.
SHARED_SOURCES = ("_toc.yml", "_config.yml", "book/references.bib")


@dataclass
class Stale:
    """A message of a translated page that its catalogue lacks, or holds fuzzy or untranslated."""

    docname: str
    state: str  # "missing", "fuzzy" or "untranslated"
    msgid: str
    previous: str = ""  # the English the translation was made for (a fuzzy message's `#| msgid`)

    def describe(self, catalogue: str) -> str:
        head = {"missing": "missing (English the catalogue does not have yet: `make translations` adds it)",
                "fuzzy": ("fuzzy (its English changed since it was translated" +
                          (": [-removed-] and {+added+} words" if self.previous else "") + ")"),
                "untranslated": "untranslated"}[self.state]
        text = word_diff(self.previous, self.msgid) if self.previous else self.msgid
        return f"{catalogue}: {head}:\n      {text}"


def word_diff(old: str, new: str) -> str:
    """`new`, with the words it lost from `old` as [-...-] and the words it gained as {+...+}."""
    before, after = old.split(), new.split()
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            out += after[j1:j2]
            continue
        if i2 > i1:
            out.append("[-" + " ".join(before[i1:i2]) + "-]")
        if j2 > j1:
            out.append("{+" + " ".join(after[j1:j2]) + "+}")
    return " ".join(out)


def prose(text: str) -> str:
    """A page's text without the code of its code cells (their options, which hold the alt texts
    and captions that are messages, stay)."""
    kept, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        match = CODE_CELL.match(lines[i])
        kept.append(lines[i])
        i += 1
        if not match:
            continue
        if i < len(lines) and lines[i].strip() == "---":  # a YAML block of options
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "---"), i)
            kept += lines[i:end + 1]
            i = end + 1
        while i < len(lines) and lines[i].startswith(":"):
            kept.append(lines[i])
            i += 1
        while i < len(lines) and lines[i].rstrip() != match.group(1):
            i += 1
    return "\n".join(kept)


def fingerprint(root: Path, docname: str, catalogue: Path) -> str:
    """What a page's messages and its catalogue are made of, hashed."""
    digest = hashlib.sha256()
    page = root / f"{docname}.md"
    text = page.read_text(encoding="utf-8") if page.is_file() else ""
    digest.update(prose(text).encode("utf-8"))
    if "{package-additions}" in text:  # the closing list: names and docstrings from the exported cells
        from book.reference import chapter_additions

        try:
            digest.update(chapter_additions(root, f"{docname}.md").encode("utf-8"))
        except Exception as err:  # noqa: BLE001 (the chapters do not export: the export names why)
            digest.update(repr(err).encode("utf-8"))
    for name in SHARED_SOURCES:
        if (root / name).is_file():
            digest.update((root / name).read_bytes())
    digest.update(catalogue.read_bytes() if catalogue.is_file() else b"")
    return digest.hexdigest()


def remembered(root: Path) -> dict[str, dict]:
    try:
        return json.loads((root / FRESH).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def remember(root: Path, known: dict[str, dict]) -> None:
    path = root / FRESH
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(known, indent=1, sort_keys=True, ensure_ascii=False), encoding="utf-8")
    temporary.replace(path)


def compare(docname: str, template, catalogue) -> list[Stale]:
    """Each message of the English page (`template`) that the catalogue lacks or holds fuzzy or
    untranslated."""
    found = []
    for message in template:
        if not message.id:
            continue
        entry = catalogue.get(message.id, context=message.context)
        if entry is None:
            found.append(Stale(docname, "missing", message.id))
        elif entry.fuzzy:
            previous = entry.previous_id[0] if entry.previous_id else ""
            found.append(Stale(docname, "fuzzy", message.id, previous))
        elif not entry.string:
            found.append(Stale(docname, "untranslated", message.id))
    return found


def stale_messages(root: Path, catalogues: dict[str, Path], extract, read_catalogue) -> list[Stale]:
    """Every message of the translated pages (`catalogues`: docname -> .po) that needs translating.

    What was found for a page is remembered with its fingerprint: a page whose text and catalogue
    did not change since is not read again. The others are extracted (`extract(root)`: docname ->
    .pot) and compared with their catalogues."""
    from babel.messages.pofile import read_po

    known = remembered(root)
    prints = {docname: fingerprint(root, docname, path) for docname, path in catalogues.items()}
    pending = [docname for docname in catalogues if known.get(docname, {}).get("fingerprint") != prints[docname]]
    if pending:
        templates = extract(root)
        for docname in pending:
            if docname in templates:
                with open(templates[docname], "rb") as handle:
                    template = read_po(handle)
                found = compare(docname, template, read_catalogue(catalogues[docname]))
            else:
                found = [Stale(docname, "missing", f"(the book has no page {docname}: remove its catalogue)")]
            known[docname] = {"fingerprint": prints[docname], "stale": [vars(s) for s in found]}
        remember(root, {docname: value for docname, value in known.items() if docname in catalogues})
    return [Stale(**entry) for docname in catalogues for entry in known[docname]["stale"]]


def entries(text: str) -> list[str]:
    """A catalogue's text cut into its entries (the header first), each with its comments."""
    return [block for block in re.split(r"\n\s*\n", text.strip("\n")) if block.strip()]


def entry_key(block: str):
    """(context, id) of an entry and everything else it says, as babel reads it."""
    from babel.messages.pofile import read_po

    catalogue = read_po(io.BytesIO(block.encode("utf-8")))
    messages = [m for m in catalogue if m.id]
    if not messages:  # the header, or an obsolete entry
        obsolete = list(catalogue.obsolete.values())
        if obsolete:
            m = obsolete[0]
            return ("obsolete", m.context, str(m.id)), (m.string, sorted(m.flags))
        return ("header",), None
    m = messages[0]
    return ((m.context, str(m.id)),
            (m.string, sorted(m.flags), list(m.previous_id), list(m.user_comments), list(m.auto_comments)))


def read_previous(catalogue) -> None:
    """Give each message of a catalogue babel read the previous English of its `#| msgid` lines
    (`previous_id`): babel reads those lines as comments, `| msgid ...`, and would write them
    back as `# | msgid ...`."""
    from babel.messages.pofile import denormalize

    for message in catalogue:
        lines = [c[1:].strip() for c in message.user_comments if c.startswith("|")]
        if not lines:
            continue
        message.user_comments = [c for c in message.user_comments if not c.startswith("|")]
        text = "\n".join(lines)
        if text.startswith("msgid "):
            try:
                message.previous_id = [denormalize(text.removeprefix("msgid ").split("\nmsgid_plural ")[0])]
            except Exception:  # noqa: BLE001 (a hand-written line babel cannot read: the word diff goes)
                message.previous_id = []


def with_previous(text: str, catalogue, width: int = 76) -> str:
    """A catalogue's text with each fuzzy message's previous English (`#| msgid`) before its
    `msgid`, as gettext's msgmerge writes it (babel writes a long one on one comment line that it
    cannot read back)."""
    from babel.messages.pofile import normalize

    out = []
    for block in entries(text):
        key, _ = entry_key(block)
        message = catalogue.get(key[1], context=key[0]) if len(key) == 2 else None
        if message is not None and message.previous_id:
            previous = [f"#| {line}" for line in f"msgid {normalize(message.previous_id[0], width=width)}".split("\n")]
            lines = block.split("\n")
            at = next(i for i, line in enumerate(lines) if line.startswith(("msgctxt ", "msgid ")))
            block = "\n".join(lines[:at] + previous + lines[at:])
        out.append(block)
    return "\n\n".join(out) + "\n\n"


def write_catalogue_text(old: str | None, new: str) -> str:
    """`new` (a merged catalogue as babel writes it), with each entry that says the same as one of
    `old` written as `old` wrote it, and `old`'s header; `old` itself when no entry changed."""
    if old is None:
        return new
    before = {}
    old_blocks = entries(old)
    for block in old_blocks:
        key, value = entry_key(block)
        before.setdefault(key, (value, block))
    out = []
    for block in entries(new):
        key, value = entry_key(block)
        if key == ("header",):
            out.append(before.get(key, (None, block))[1])
        elif key in before and before[key][0] == value:
            out.append(before[key][1])
        else:
            out.append(block)
    text = "\n\n".join(out) + new[len(new.rstrip("\n")):]
    return old if [entry_key(b) for b in entries(old)] == [entry_key(b) for b in out] else text
