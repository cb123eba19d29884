"""Order pairs found in reviews: the rule that finds them in held-out IMDB text, swaps their
clauses and says which of the two texts should read as the more positive.

A sentence of two clauses joined by a contrast stresses one of them: `X, but Y.` and `X, yet
Y.` the clause after the connective, `Although X, Y.` (also `Though`, `Even though`, `While`)
the main clause Y, `X, although Y.` (or `though`) the main clause X. Swapping the clauses
(`Y, but X.`, `Although Y, X.`, `Y, although X.`) keeps every word and the connective's place
and moves the stress to the other clause. Where the two clauses lean opposite ways, the two
texts should then get opposite verdicts, and the one whose stressed clause is positive should
read as the more positive: a bag of single words scores both alike by construction, a model
that reads order can tell them apart.

Which way each clause leans is decided by VADER (Hutto and Gilbert, 2014; the `vadersentiment`
package, MIT licensed: a lexicon of words whose valence people rated, with rules for negation,
intensifiers and punctuation), on each clause read alone: its `compound` score. A pair is kept
where the two clauses' scores have opposite signs, each at least `LEAN` from zero. The pair's
`positive` text is the one whose stressed clause has the positive score. Nothing here reads a
model of the book.

The rows name each pair by the review (its place in IMDB's train file), the sentence's place
among that review's sentences, the construction, the clauses' scores and the sha256 of both
texts; not the texts, which are IMDB's and are rebuilt from the data (`pair_texts`) and checked
against those hashes.

What this deliberately does not handle: sentences with more than one contrast word or with
quotes, brackets, colons, semicolons or dashes (skipped, not parsed), clauses that are not
full clauses (a few are let through; `order_pairs_check.jsonl` measures how often), and
languages other than English.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np

from scratchbook.records import ORDER_PAIRS_CHECK, ORDER_PAIRS_FOUND

PAIRS = ORDER_PAIRS_FOUND.path
CHECK = ORDER_PAIRS_CHECK.path

LEAN = 0.15  # each clause's VADER compound score at least this far from zero
WORDS = (3, 30)  # words a clause may hold, fewest and most
SIZE = 300  # pairs drawn from those found
DRAW_SEED = 2026  # the draw of SIZE pairs and their split into halves
CHECK_SIZE = 50  # pairs drawn (from the SIZE) for the labelling check
CHECK_SEED = 7
SOURCE_SEED, SOURCE_VAL_SIZE, SOURCE_HOLDOUT = 0, 2500, "blocks"  # seed 0's validation slice

SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
# (kind, pattern, the clause the construction stresses); the first that matches is taken
CONSTRUCTIONS = (
    ("but", re.compile(r"^(?P<x>.+?)(?P<comma>,?) (?P<word>but) (?P<y>.+?)(?P<end>[.!?]+)$"),
     "y"),
    ("yet", re.compile(r"^(?P<x>.+?)(?P<comma>,) (?P<word>yet) (?P<y>.+?)(?P<end>[.!?]+)$"),
     "y"),
    ("although first", re.compile(r"^(?P<word>Although|Though|Even though|While) "
                                  r"(?P<x>[^,]+), (?P<y>.+?)(?P<end>[.!?]+)$"), "y"),
    ("although second", re.compile(r"^(?P<x>.+?)(?P<comma>,) (?P<word>although|though) "
                                   r"(?P<y>.+?)(?P<end>[.!?]+)$"), "x"),
)
CONTRAST = re.compile(r"\b(but|although|though|however|yet|while|whereas|despite|except|"
                      r"nevertheless|nonetheless)\b", re.IGNORECASE)
IDIOM = re.compile(r"\b(not only|nothing but|anything but|all but|but also|but not|"
                   r"cannot but|can't help but|but then)\b", re.IGNORECASE)
SKIPPED = re.compile(r"[;:()\"]| - |--")
# a second clause starting with one of these is no clause of its own ("..., but is the only")
NOT_A_SUBJECT = frozenset(
    "is was are were be been being has have had does did do can could will would should may "
    "might must also still not never then at in on for to with as that which of by from and "
    "or so just".split())
WORD = re.compile(r"[A-Za-z']+")


def sentences(text: str) -> list[str]:
    """A cleaned review cut into sentences: after `.`, `!` or `?` and spaces, before a
    capital letter, a quote or a bracket; runs of spaces inside a sentence made one."""
    return [" ".join(s.split()) for s in SENTENCE_BREAK.split(text.strip()) if s.strip()]


def lower_case_words(texts: list[str]) -> set[str]:
    """Words seen more often in lower case than capitalised inside sentences (not first) of
    `texts`: those a clause moved from a sentence's start to its middle is written in lower
    case with; others (names, "I") keep their capital."""
    counts: Counter = Counter()
    for text in texts:
        for sentence in sentences(text):
            for word in WORD.findall(sentence)[1:]:
                counts[(word.lower(), word[:1].islower())] += 1
    return {word for (word, lower), n in counts.items()
            if lower and n > counts[(word, False)]}


def as_middle(clause: str, lower_words: set[str]) -> str:
    """A clause that started a sentence, written to stand inside one."""
    first = WORD.match(clause)
    if first and first.group().lower() in lower_words and first.group() != "I":
        return clause[:1].lower() + clause[1:]
    return clause


def as_start(clause: str) -> str:
    """A clause written to start a sentence."""
    return clause[:1].upper() + clause[1:]


def construction(sentence: str) -> dict | None:
    """The sentence's two clauses (`x` first, `y` second), its construction, the clause it
    stresses and the match, or None where the rule finds no pair in it (before any clause is
    scored)."""
    body = sentence.rstrip(".!?")
    if (not sentence[:1].isupper() or re.search(r"[.!?]", body) or SKIPPED.search(sentence)
            or len(CONTRAST.findall(sentence)) != 1 or IDIOM.search(sentence)):
        return None
    for kind, pattern, stressed in CONSTRUCTIONS:
        found = pattern.match(sentence)
        if found is not None:
            break
    else:
        return None
    x, y = found["x"], found["y"]
    if not all(WORDS[0] <= len(c.split()) <= WORDS[1] for c in (x, y)):
        return None
    if y.split()[0].lower() in NOT_A_SUBJECT:
        return None
    return {"kind": kind, "x": x, "y": y, "stressed": stressed, "found": found}


def swapped(parts: dict, lower_words: set[str]) -> str:
    """The sentence with its clauses swapped, the connective kept in its place: the stress
    moves to the other clause."""
    found, x, y = parts["found"], parts["x"], parts["y"]
    if parts["kind"] == "although first":
        return f"{found['word']} {y}, {x}{found['end']}"
    return (f"{as_start(y)}{found['comma']} {found['word']} {as_middle(x, lower_words)}"
            f"{found['end']}")


def sha256(text: str) -> str:
    """The first 16 hex digits of the sha256 of a text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def leaning(x_score: float, y_score: float) -> bool:
    """The rule's test of a pair's clauses: opposite signs, each at least `LEAN` from 0."""
    return x_score * y_score < 0 and min(abs(x_score), abs(y_score)) >= LEAN


def positive_member(stressed: str, x_score: float, y_score: float) -> str:
    """Which text should read as the more positive: the original sentence if the clause it
    stresses (`x` or `y`) leans positive, else the swapped one, which stresses the other."""
    return "original" if (y_score if stressed == "y" else x_score) > 0 else "swapped"


def find_pairs(train_texts: list[str], train_labels: list[int], review_index: list[int]
               ) -> list[dict]:
    """Every pair the rule finds in the reviews `review_index` of train (in that order), each
    with its texts (`original`, `swapped`, `positive`, `negative`) and its row's fields."""
    from scratchformer.data.framing import clean_review
    from scratchformer.measure.baselines import review_words
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    analyser = SentimentIntensityAnalyzer()
    cleaned = {i: clean_review(train_texts[i]) for i in review_index}
    lower_words = lower_case_words(list(cleaned.values()))
    pairs, seen = [], set()
    for i in review_index:
        for place, sentence in enumerate(sentences(cleaned[i])):
            parts = construction(sentence)
            if parts is None or sentence in seen:
                continue
            x_score = analyser.polarity_scores(parts["x"])["compound"]
            y_score = analyser.polarity_scores(parts["y"])["compound"]
            if not leaning(x_score, y_score):
                continue
            other = swapped(parts, lower_words)
            if other == sentence or (Counter(review_words(other))
                                     != Counter(review_words(sentence))):
                continue
            seen.add(sentence)
            member = positive_member(parts["stressed"], x_score, y_score)
            positive, negative = ((sentence, other) if member == "original"
                                  else (other, sentence))
            pairs.append({
                "review": i, "sentence": place, "kind": parts["kind"],
                "stressed": parts["stressed"],
                "x_score": x_score, "y_score": y_score, "positive_is": member,
                "review_label": train_labels[i],
                "original_sha256": sha256(sentence), "swapped_sha256": sha256(other),
                "original": sentence, "swapped": other,
                "positive": positive, "negative": negative})
    return pairs


def draw(found: int) -> tuple[list[int], list[str]]:
    """The places of the `SIZE` pairs drawn of `found`, in order, and each one's half
    (`validation` or `test`, half each, at random)."""
    generator = np.random.default_rng(DRAW_SEED)
    chosen = sorted(generator.choice(found, SIZE, replace=False).tolist())
    halves = np.array(["test"] * SIZE, dtype=object)
    halves[generator.permutation(SIZE)[: SIZE // 2]] = "validation"
    return chosen, halves.tolist()


def check_sample() -> list[int]:
    """The places (among the `SIZE` rows) of the `CHECK_SIZE` pairs drawn for the check."""
    generator = np.random.default_rng(CHECK_SEED)
    return sorted(generator.choice(SIZE, CHECK_SIZE, replace=False).tolist())


def source_reviews(train_labels: list[int]) -> list[int]:
    """The source: seed 0's validation slice of train, held out in blocks as the served
    model's run held it out (`scratchformer.data.holdout`)."""
    from scratchformer.data.holdout import holdout

    return holdout(train_labels, SOURCE_VAL_SIZE, SOURCE_SEED, SOURCE_HOLDOUT)[0].tolist()


def source_fit_reviews(train_labels: list[int]) -> list[int]:
    """The rest of train beside the source: seed 0's fit split, on which the counting models
    scored on the pairs are fitted (as the taught runs' teacher was)."""
    from scratchformer.data.holdout import holdout

    return holdout(train_labels, SOURCE_VAL_SIZE, SOURCE_SEED, SOURCE_HOLDOUT)[1].tolist()


def read_pairs(path: Path = PAIRS) -> dict:
    """The committed pairs file."""
    return json.loads(path.read_text(encoding="utf-8"))


def pair_texts(record: dict, train_texts: list[str], train_labels: list[int]) -> list[dict]:
    """The record's rows with their texts rebuilt from IMDB's train split, each checked
    against the row's hashes (a ValueError where the rule or the data now gives others)."""
    found = find_pairs(train_texts, train_labels, source_reviews(train_labels))
    by_place = {(p["review"], p["sentence"]): p for p in found}
    rows = []
    for row in record["pairs"]:
        pair = by_place.get((row["review"], row["sentence"]))
        if pair is None or pair["original_sha256"] != row["original_sha256"] \
                or pair["swapped_sha256"] != row["swapped_sha256"]:
            raise ValueError(f"pair {row['id']} (review {row['review']}, sentence "
                             f"{row['sentence']}): the rule finds another text there now")
        rows.append({**row, **{k: pair[k] for k in
                               ("original", "swapped", "positive", "negative")}})
    return rows
