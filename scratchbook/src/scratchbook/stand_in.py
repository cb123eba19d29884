"""The reviews a page runs on when no copy of IMDB can be reached: generated stand-ins, which
each page that uses them says it does, and whose numbers say nothing about IMDB.

Two generators, for the two kinds of page: labelled reviews whose sentiment sits in a few
phrases among neutral filler, some very long (chapter 11 and the counting appendix), and
review-like text whose splits repeat some texts as IMDB's do (chapters 12 and 13). What this
deliberately does not do: resemble IMDB's vocabulary or its lengths beyond that.
"""

from __future__ import annotations

import random

from scratchformer.data.imdb import STAND_IN_NOTICE, ReviewSplit, book_reviews, load_unlabeled

POSITIVE = ["a brilliant film", "I loved every minute", "superb acting", "truly moving",
            "highly recommended"]
NEGATIVE = ["a waste of time", "I hated it", "dreadful acting", "painfully boring",
            "avoid this one"]
FILLER = ["the plot follows a family", "the camera work is", "we watched it on a Sunday",
          "the soundtrack", "the second half", "the director's earlier work",
          "as the credits rolled", "my friend said"]
REAL_DATA = "the real IMDB reviews"
# The package's STAND_IN_NOTICE in the words of the Chinese edition (translated by a language
# model, as the edition's catalogues are).
STAND_IN_NOTICE_ZH = (
    ":::{warning}\n"
    "**本页是在生成的替代语料上计算的，而不是在 IMDB 上**：构建本页时无法获取 IMDB 影评，"
    "所以其中单元格描述的是编造的文本（它引用的记录运行用的是真实影评）。要在 IMDB 上构建本页，"
    "请在联网时运行一次 `make imdb`，或者从 <https://ai.stanford.edu/~amaas/data/sentiment/> "
    "下载影评并运行 `IMDB_DIR=/path/to/aclImdb make book`。\n"
    ":::"
)


def glue_data_notice(name: str, stand_in: bool) -> None:
    """Glue the notice a page opens with under `name` (its `{glue:md}` directive): on a page
    computed on a stand-in, `STAND_IN_NOTICE`, and under `<name>_zh` its Chinese words, which
    the Chinese edition's page shows in its place (tools/book/i18n_glue.py); nothing on IMDB.

    Described in chapter 13, "The text and a tokenizer with a mask"."""
    from scratchbook.pages import glue_md

    glue_md(name, STAND_IN_NOTICE if stand_in else "")
    glue_md(f"{name}_zh", STAND_IN_NOTICE_ZH if stand_in else "")


def labelled_stand_in(count: int, seed: int) -> ReviewSplit:
    """Synthetic, clearly-not-IMDB reviews: sentiment phrases in neutral filler, some
    very long.

    Described in chapter 11, section "Loading"."""
    rng = random.Random(seed)
    texts, labels = [], []
    for i in range(count):
        label = i % 2
        phrases = POSITIVE if label else NEGATIVE
        sentences = [rng.choice(FILLER)
                     + (" " + rng.choice(phrases) if rng.random() < 0.3 else "")
                     + "." for _ in range(rng.choice([3, 8, 20, 60]))]
        paragraphs = [" ".join(sentences[j : j + 4]) for j in range(0, len(sentences), 4)]
        texts.append("<br /><br />".join(paragraphs))
        labels.append(label)
    return ReviewSplit(texts, labels, "stand-in")


def page_reviews() -> tuple[dict[str, ReviewSplit], str]:
    """The reviews a page runs on, and what they are: IMDB when `book_reviews` reaches a
    copy, else a generated stand-in of 4,000 training and 2,000 test reviews.

    Described in chapter 11, section "Loading"."""
    data = book_reviews()
    if data is not None:
        return data, REAL_DATA
    data = {"train": labelled_stand_in(4000, seed=1), "test": labelled_stand_in(2000, seed=2)}
    return data, ("a generated STAND-IN (no IMDB copy was found); its numbers say nothing "
                  "about IMDB")


def stand_in_texts(count: int, seed: int) -> list[str]:
    """Generated review-like text, used only when IMDB cannot be reached.

    Described in chapter 12, section "The reviews as training text"."""
    rng = random.Random(seed)
    openings = ["This movie", "The film", "The plot", "The acting", "The ending"]
    verbs = ["was", "is", "felt", "seemed"]
    verdicts = ["wonderful", "boring", "brilliant", "predictable", "moving", "terrible",
                "a waste of time", "worth watching twice", "painfully slow", "great fun"]
    asides = ["I watched it with my family.", "The music is by a famous composer.",
              "It is based on a novel.", "We saw it on a rainy Sunday.<br /><br />"]
    texts = []
    for _ in range(count):
        sentences = [f"{rng.choice(openings)} {rng.choice(verbs)} {rng.choice(verdicts)}."
                     for _ in range(rng.randint(3, 9))]
        sentences.insert(rng.randrange(len(sentences)), rng.choice(asides))
        texts.append(" ".join(sentences) + f" {rng.randint(1, 10)}/10")
    return texts


def stand_in_splits() -> tuple[ReviewSplit, list[str], ReviewSplit]:
    """Training, unlabelled and test stand-in reviews, some repeated across them as in IMDB.

    Described in chapter 12, section "The reviews as training text"."""
    texts = stand_in_texts(6_000, seed=0)
    train_split = ReviewSplit(texts[:2_000], [i % 2 for i in range(2_000)], "stand-in")
    unlabeled = texts[2_000:5_000] + texts[:50]  # some repeat training reviews
    test_split = ReviewSplit(texts[5_000:] + unlabeled[:20],  # and some the test reviews
                             [i % 2 for i in range(1_020)])
    return train_split, unlabeled, test_split


def language_model_splits() -> tuple[ReviewSplit, list[str], ReviewSplit, str]:
    """IMDB's training, unlabelled and test reviews when `book_reviews` reaches a copy, else
    `stand_in_splits`; and what they are (`REAL_DATA` or a stand-in's description).

    Described in chapter 12, section "The reviews as training text", and in chapter 13, "The
    text and a tokenizer with a mask"."""
    imdb = book_reviews()
    if imdb is None:
        return (*stand_in_splits(), "a generated STAND-IN (no IMDB copy was found), not IMDB")
    return imdb["train"], load_unlabeled(), imdb["test"], REAL_DATA
