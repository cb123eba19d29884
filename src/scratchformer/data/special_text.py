"""Reviews that write a special token's text ("[PAD]", "[MASK]", "<|endoftext|>", ...), found
and named where they were read, for the commands' `--special-text refuse`, as the appendix
"Running it for real" of *Transformers from Scratch* describes it in "Failing safely".

By default every command reads such a review as plain text: its tokenizer encodes the
letters of "[MASK]", never the `[MASK]` id (chapters 12 and 13). `--special-text refuse`
stops the command instead, before anything is written, naming the split and the place (the
file and line of a JSON Lines file, the file of the `aclImdb/` layout, the review's number in
a parquet file or the hub's split) of the first few such texts, and how many there are.

Written by hand, not exported. What this module deliberately does not handle: special tokens
of tokenizers other than the book's, and texts that write one only after cleaning (`<br />`
replaced by a space cannot join two halves of one).
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scratchformer.data.imdb import find_split_file
from scratchformer.tokenize.gpt2_files import END_OF_TEXT

SPECIAL_TEXT_CHOICES = ("text", "refuse")  # the values of every command's --special-text
# The special tokens of the book's tokenizers: chapter 10's framing and chapter 13's
# tokenizer ([PAD], [CLS], [SEP]; [MASK]), chapter 12's (end of text, the two sentiments).
SPECIAL_TEXTS = ("[PAD]", "[CLS]", "[SEP]", "[MASK]", END_OF_TEXT,
                 "<|negative|>", "<|positive|>")
SHOWN = 5  # the offending texts a refusal names, in the order they were read


@dataclass(frozen=True)
class ReadTexts:
    """Texts a command reads: the split they belong to (`train`, `test`, `unsup`; empty
    for `classify`'s texts), where they were read (a file, a folder, `hub:imdb/...`) and,
    where the source cannot say it, the place of each text (`classify`'s "argument 2").
    """

    split: str
    texts: Sequence[str]
    source: str
    places: Sequence[str] | None = None


class SpecialTextRefused(ValueError):
    """Texts that write a special token's text, under `--special-text refuse`."""


def special_text_in(texts: Sequence[str],
                    specials: Sequence[str] = SPECIAL_TEXTS) -> list[tuple[int, str]]:
    """(index, the first special token's text it writes) of each text that writes one."""
    pattern = re.compile("|".join(re.escape(special) for special in specials))
    found = []
    for index, text in enumerate(texts):
        match = pattern.search(text)
        if match:
            found.append((index, match.group()))
    return found


def jsonl_line_numbers(path: Path, indices: Sequence[int]) -> dict[int, int]:
    """The line number of each review index of a JSON Lines file, counted as
    `scratchformer.data.imdb.json_lines` reads it (blank lines hold no review)."""
    wanted, numbers, index = set(indices), {}, -1
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            index += 1
            if index in wanted:
                numbers[index] = number
                if len(numbers) == len(wanted):
                    break
    return numbers


def review_places(source: str, indices: Sequence[int]) -> list[str]:
    """Where each review `indices[i]` of a split read from `source` is: `FILE, line N` in
    a JSON Lines file, the review's own file in the `aclImdb/` layout (`neg/` then `pos/`,
    sorted, as `read_aclimdb` reads them; `unsup/` sorted), else `SOURCE, review N`
    (counted from 1: a parquet file, the hub)."""
    path = Path(source)
    if path.is_file() and path.name.endswith((".jsonl", ".jsonl.gz")):
        numbers = jsonl_line_numbers(path, indices)
        return [f"{path}, line {numbers[i]}" if i in numbers else f"{path}, review {i + 1}"
                for i in indices]
    if path.is_dir():
        if (path / "neg").is_dir() or (path / "pos").is_dir():
            files = [*sorted((path / "neg").glob("*.txt")),
                     *sorted((path / "pos").glob("*.txt"))]
        else:
            files = sorted(path.glob("*.txt"))
        return [str(files[i]) if i < len(files) else f"{path}, review {i + 1}"
                for i in indices]
    return [f"{source}, review {i + 1}" for i in indices]


def unlabeled_source(source: str | os.PathLike | None = None) -> str:
    """Where `scratchformer.data.imdb.load_unlabeled(source)` reads the unlabelled
    reviews: the `aclImdb/train/unsup/` folder, the `unsup` file, or the hub's split."""
    if source is None:
        source = os.environ.get("IMDB_DIR") or None
    if source is None:
        return "hub:imdb/unsupervised"
    folder = Path(source).expanduser()
    official = folder / "aclImdb" if (folder / "aclImdb").is_dir() else folder
    if (official / "train" / "unsup").is_dir():
        return str(official / "train" / "unsup")
    found = find_split_file(folder, "unsup") if folder.is_dir() else None
    return str(found or folder)


def check_special_text(choice: str, read: Sequence[ReadTexts],
                       specials: Sequence[str] = SPECIAL_TEXTS, shown: int = SHOWN) -> None:
    """Under `choice` "refuse", raise `SpecialTextRefused` if any text of `read` writes a
    special token's text, naming the split and place of the first `shown` such texts and
    how many there are in each split; under "text" (the default), do nothing.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    if choice not in SPECIAL_TEXT_CHOICES:
        raise ValueError(f"--special-text {choice!r}: choose one of {SPECIAL_TEXT_CHOICES}")
    if choice == "text":
        return
    found = [(texts, index, special) for texts in read
             for index, special in special_text_in(texts.texts, specials)]
    if not found:
        return
    named = []
    for texts in read:  # the places of the first `shown`, each source read once
        first = [(index, special) for which, index, special in found[:shown]
                 if which is texts]
        if not first:
            continue
        indices = [index for index, _ in first]
        places = ([texts.places[i] for i in indices] if texts.places is not None
                  else review_places(texts.source, indices))
        split = f"{texts.split} split, " if texts.split else ""
        named += [f"{split}{place} writes {special!r}"
                  for place, (_, special) in zip(places, first)]
    counts = ", ".join(f"{sum(1 for which, _, _ in found if which is texts):,} of "
                       f"{len(texts.texts):,} {texts.split or 'texts'}" for texts in read)
    kind = "review" if any(texts.split for texts in read) else "text"
    kind = f"{kind} writes" if len(found) == 1 else f"{kind}s write"
    more = f"; the first {len(named)}" if len(found) > len(named) else ""
    raise SpecialTextRefused(
        f"--special-text refuse: {len(found):,} {kind} a special token's text "
        f"({counts}){more}: {'; '.join(named)}. Remove or rewrite those strings, or read "
        "them as plain text with --special-text text (the default)")
