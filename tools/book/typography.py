"""The Chinese edition's typography and terms, checked (and spacing fixed) in its catalogues.

The rule is d2l-zh's, written in `locales/zh_CN/GLOSSARY.md`:

- a half-width space between Chinese characters and Latin letters or digits (第 4 章, 词元 ID),
  and between Chinese characters and what renders as Latin text: code spans, formulas, glued
  numbers, citations (词元 `id`, 当 $d_k$ 变大时, 共 {glue:text}`n` 个);
- full-width punctuation in Chinese sentences: no half-width `, ; : ? ! ( )` or `"` beside a
  Chinese character, no `...` for an ellipsis;
- no space between full-width punctuation and what stands beside it (Mac。, not Mac 。);
- no space inside numbers and no English thousands separators in a Chinese sentence (25000,
  not 25,000);
- one word per term: the glossary's section "不用的写法" lists the forms the edition does not
  use, each beside the one it uses.

A message is MyST Markdown. Its markup is read the way tests/book/test_translations.py reads it:
roles (`{glue:text}`...``, `{numref}`...``, `{cite:t}`...``), formulas, code spans, link targets
and bare links are taken whole, and only the text a reader sees is checked; emphasis markers and
a link's brackets are invisible. A role or span counts as Latin text beside a Chinese character
unless it renders Chinese words of its own: a glued `<key>_zh`, a `{numref}` ("图 4.2"), a
reference with Chinese words.

    python tools/translations.py typography          # every catalogue (make check)
    python tools/translations.py typography --fix FILE.po ...   # spaces added and removed

`--fix` changes only spaces (added where Chinese meets Latin text, removed beside full-width
punctuation), always outside the markup; punctuation, numbers and terms are left to a person.

What this deliberately does not handle: the text inside a role (a glued value is checked on the
built page, tests/book/test_translations.py), messages that are not Chinese (a table cell "$B$").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Full-width punctuation of a Chinese sentence (and the curly double quotes it uses).
FULL_WIDTH = "\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65\u201c\u201d\u2026\u2014"
IS_CJK = re.compile(f"[{CJK}]")
IS_FULL_WIDTH = re.compile(f"[{FULL_WIDTH}]")
# Latin text: letters (Latin, Greek), digits, and the signs that stick to a number (15%, 90°).
IS_LATIN = re.compile(r"[A-Za-z0-9\u00c0-\u024f\u0370-\u03ff%°²³±\u2212]")
HALF_WIDTH_PUNCTUATION = ',;:?!()"'

# Markup taken whole, in this order (tests/book/test_translations.py's KEPT, with the link's
# target and its closing bracket together).
MARKUP = re.compile(
    r"(?P<role>\{[a-z:]+\}`[^`]*`)"
    r"|(?P<math>\$\$.+?\$\$|\$[^$]+\$)"
    r"|(?P<code>``.+?``|`[^`]+`)"
    r"|(?P<target>\]\([^)]*\))"
    r"|(?P<link><https?://[^>]+>)",
    re.S)
ROLE_WORDS = re.compile(r"\{(?:ref|numref|doc|term)\}`(?P<words>[^`<]*?)\s*<[^>`]+>`")
INVISIBLE = "*[]"  # emphasis markers and a link's opening bracket
SPACE = " \u00a0"

LATIN, CHINESE, NEUTRAL, PUNCT, BLANK, OTHER = "latin", "chinese", "neutral", "punct", "blank", "other"


@dataclass
class Piece:
    """One thing a reader sees: a character of the text or a whole role, formula or code span."""

    kind: str  # LATIN, CHINESE, NEUTRAL, PUNCT, BLANK, OTHER
    start: int  # its place in the message
    end: int
    text: str


@dataclass
class Problem:
    rule: str
    message: str  # the whole message, for the report
    start: int
    end: int

    def spot(self) -> str:
        """The offending place with some text either side, marked with ⟦ ⟧."""
        before = self.message[max(0, self.start - 20):self.start]
        after = self.message[self.end:self.end + 20]
        return f"…{before}⟦{self.message[self.start:self.end]}⟧{after}…".replace("\n", "⏎")


def role_kind(role: str) -> str:
    """How a role renders beside Chinese text: Latin text (a number, a citation, a name),
    Chinese words (a glued `_zh` phrase, a numbered figure "图 4.2") or either."""
    name, _, text = role.partition("}`")
    name, text = name.lstrip("{"), text[:-1]
    if name.startswith("glue"):
        key = text.split("::")[-1].split(":")[0]
        return NEUTRAL if key.endswith("_zh") or name == "glue:md" else LATIN
    words = re.match(r"^([^<]*?)\s*<[^>]*>$", text)
    if words and words.group(1):  # a reference with its own words: they are what shows
        shown = words.group(1)
        first, last = classify(shown[0]), classify(shown[-1])
        return first if first == last else NEUTRAL
    if name in ("numref", "ref", "doc", "glue:md", "term"):
        return NEUTRAL  # the target's title or number, in the page's language
    return LATIN  # cite, code roles, py: roles, math


def classify(char: str) -> str:
    if IS_CJK.match(char):
        return CHINESE
    if IS_FULL_WIDTH.match(char):
        return PUNCT
    if char in SPACE:
        return BLANK
    if IS_LATIN.match(char):
        return LATIN
    return OTHER


def notation_parentheses(message: str) -> set[int]:
    """The places of half-width parentheses that hold no Chinese: notation such as a shape
    (5, 8), a call GELU(1) or an English aside, which counts as Latin text. Parentheses around
    Chinese words are a Chinese sentence's, and full-width."""
    text = MARKUP.sub(lambda m: "x" * len(m.group()), message)
    found: set[int] = set()
    opened: list[int] = []
    for index, char in enumerate(text):
        if char == "\n":
            opened.clear()
        elif char == "(":
            opened.append(index)
        elif char == ")" and opened:
            start = opened.pop()
            if not IS_CJK.search(text[start:index]):
                found.update((start, index))
    return found


def pieces(message: str) -> list[Piece]:
    """What a reader sees of a message, in order; line breaks end a run of text."""
    found: list[Piece] = []
    position = 0
    notation = notation_parentheses(message)
    for match in [*MARKUP.finditer(message), None]:
        end = match.start() if match else len(message)
        for index in range(position, end):
            char = message[index]
            if char in INVISIBLE:
                continue
            kind = OTHER if char == "\n" else LATIN if index in notation else classify(char)
            found.append(Piece(kind, index, index + 1, char))
        if match is None:
            break
        words = ROLE_WORDS.match(match.group()) if match.lastgroup == "role" else None
        if words and IS_CJK.search(words.group("words")):
            # a cross-reference's own words are prose the reader sees: {ref}`第 1 章 <label>`
            for index in range(match.start() + words.start("words"), match.start() + words.end("words")):
                found.append(Piece(classify(message[index]), index, index + 1, message[index]))
            position = match.end()
            continue
        kind = {"role": role_kind, "math": lambda _: LATIN, "code": lambda _: LATIN,
                "target": lambda _: None, "link": lambda _: LATIN}[match.lastgroup](match.group())
        if kind is not None:  # a link's target is not seen
            found.append(Piece(kind, match.start(), match.end(), match.group()))
        position = match.end()
    return found


def is_chinese(message: str) -> bool:
    """Whether the message is (partly) Chinese prose, outside its markup."""
    return any(piece.kind == CHINESE for piece in pieces(message))


def spacing_problems(message: str) -> list[Problem]:
    """Chinese beside Latin text with no space; a space beside full-width punctuation."""
    seen = pieces(message)
    problems = []
    for left, right in zip(seen, seen[1:]):
        if {left.kind, right.kind} == {CHINESE, LATIN}:
            problems.append(Problem("no space between Chinese and Latin text", message, left.start, right.end))
    for index in stray_spaces(seen):
        problems.append(Problem("a space beside full-width punctuation", message,
                                seen[index - 1].start, seen[index + 1].end))
    return problems


def stray_spaces(seen: list[Piece]) -> list[int]:
    """The spaces between full-width punctuation and text (Chinese, Latin or more punctuation).
    A space beside a sign (“play” + “ground”) stays, and so does the leading space of an English
    token quoted as it is (“ Building”)."""
    found = []
    for index in range(1, len(seen) - 1):
        left, piece, right = seen[index - 1], seen[index], seen[index + 1]
        if piece.kind != BLANK or PUNCT not in (left.kind, right.kind):
            continue
        if left.kind == OTHER or right.kind in (OTHER, BLANK) or left.kind == BLANK:
            continue
        if left.text == "\u201c" and right.kind == LATIN:
            continue
        if right.text.startswith(("{cite}", "{cite:p}")):
            continue  # a citation in parentheses: (Vaswani et al., 2017)
        found.append(index)
    return found


def punctuation_problems(message: str) -> list[Problem]:
    """Half-width punctuation beside a Chinese character (spaces between do not count);
    English thousands separators and `...` in a Chinese sentence."""
    seen = [piece for piece in pieces(message) if piece.kind != BLANK]
    problems = []
    for index, piece in enumerate(seen):
        if piece.text not in HALF_WIDTH_PUNCTUATION or piece.kind != OTHER:
            continue
        neighbours = [seen[i] for i in (index - 1, index + 1) if 0 <= i < len(seen)]
        if any(n.kind == CHINESE for n in neighbours):
            problems.append(Problem(f"half-width {piece.text!r} in a Chinese sentence (use full-width)",
                                    message, piece.start, piece.end))
    for match in re.finditer(r"\{glue:text\}`[^`]*:[^:`]*,[^:`]*`", message):
        problems.append(Problem("a glued number with English thousands separators (drop the `,` of its format)",
                                message, match.start(), match.end()))
    for match in re.finditer(r"\{glue:\w+\}`[^`:]*::[^`:]*`", message):
        problems.append(Problem("a glue from another page needs a format (`page.md::key:d`; "
                                "MyST-NB reads `page.md::key` as a format of the key `page.md:`)",
                                message, match.start(), match.end()))
    text = MARKUP.sub(lambda m: " " * len(m.group()), message)
    for match in re.finditer(r"\d,\d{3}(?!\d)", text):
        problems.append(Problem("an English thousands separator in a Chinese sentence (25000, not 25,000)",
                                message, match.start(), match.end()))
    for match in re.finditer(r"\d \d{3}(?!\d)|\d \.\d|\d\. \d", text):
        problems.append(Problem("a space inside a number", message, match.start(), match.end()))
    for match in re.finditer(r"\.\.\.", text):
        if IS_CJK.search(text[max(0, match.start() - 2):match.end() + 2]):
            problems.append(Problem("'...' in a Chinese sentence (use ……)", message, match.start(), match.end()))
    return problems


@dataclass
class Term:
    """A form the edition does not use (`avoid`), the one it uses, and the words in which
    `avoid` is part of another term and stays (线性单元 beside 单元 -> 单元格)."""

    avoid: str
    use: str
    keep: tuple[str, ...] = ()
    pattern: re.Pattern | None = None  # for a Latin word: whole words only


def read_terms(glossary: Path) -> list[Term]:
    """The rows of the glossary's table under "不用的写法": | 不用 | 用 | 保留的词 |."""
    terms: list[Term] = []
    if not glossary.is_file():
        return terms
    inside = False
    for line in glossary.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            inside = "不用的写法" in line
            continue
        if not inside or not line.startswith("| "):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 2 or cells[0] in ("不用", "---") or set(cells[0]) <= {"-"}:
            continue
        avoid, use = cells[0].strip("`"), cells[1].strip("`")
        keep = tuple(word.strip().strip("`") for word in re.split(r"[、,]", cells[2]) if word.strip()) \
            if len(cells) > 2 else ()
        pattern = re.compile(rf"(?<![A-Za-z_]){re.escape(avoid)}(?![A-Za-z_])") \
            if re.fullmatch(r"[A-Za-z ]+", avoid) else None
        terms.append(Term(avoid, use, keep, pattern))
    return terms


def term_problems(message: str, terms: list[Term]) -> list[Problem]:
    """Each place where the message uses a form the glossary does not (outside its markup)."""
    text = MARKUP.sub(lambda m: " " * len(m.group()), message)
    problems = []
    for term in terms:
        matches = term.pattern.finditer(text) if term.pattern else re.finditer(re.escape(term.avoid), text)
        for match in matches:
            allowed = [term.use, *term.keep]
            if any(_covers(text, word, match.start(), match.end()) for word in allowed if term.avoid in word):
                continue
            problems.append(Problem(f"{term.avoid!r}: the glossary's word is {term.use!r}",
                                    message, match.start(), match.end()))
    return problems


def _covers(text: str, word: str, start: int, end: int) -> bool:
    """Whether an occurrence of `word` in `text` spans [start, end)."""
    for offset in range(len(word) - (end - start) + 1):
        begin = start - offset
        if begin >= 0 and text[begin:begin + len(word)] == word:
            return True
    return False


EXERCISE = re.compile(r"\*\*练习")
EXERCISE_HEAD = re.compile(r"\*\*练习 \d+（[^*]+?）\*\*。")


def form_problems(message: str) -> list[Problem]:
    """An exercise's run-in head in any other form than **练习 1（手算）**。"""
    return [Problem("an exercise head is written **练习 1（手算）**。", message, match.start(), match.end() + 8)
            for match in EXERCISE.finditer(message) if not EXERCISE_HEAD.match(message, match.start())]


def problems(message: str, terms: list[Term]) -> list[Problem]:
    """Everything wrong with one translated message (nothing for a message with no Chinese)."""
    if not is_chinese(message):
        return []
    found = (spacing_problems(message) + punctuation_problems(message) + term_problems(message, terms)
             + form_problems(message))
    return sorted(found, key=lambda problem: problem.start)


def fix_spacing(message: str) -> str:
    """The message with a space between Chinese and Latin text and none beside full-width
    punctuation. A space goes next to the Chinese character, so that emphasis markers and
    link brackets stay on the Latin side (**BPE** 算法, 见 [BPE](x))."""
    if not is_chinese(message):
        return message
    inserts: set[int] = set()
    seen = pieces(message)
    for left, right in zip(seen, seen[1:]):
        if {left.kind, right.kind} == {CHINESE, LATIN}:
            inserts.add(left.end if left.kind == CHINESE else right.start)
    deletes = {seen[index].start for index in stray_spaces(seen)}
    out = []
    for index, char in enumerate(message):
        if index in inserts:
            out.append(" ")
        if index not in deletes:
            out.append(char)
    if len(message) in inserts:
        out.append(" ")
    return "".join(out)
