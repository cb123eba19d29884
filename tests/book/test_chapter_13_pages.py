"""Chapter 13 and its appendix "Experiments behind chapter 13", read as a reader reads them,
without building the book: no sentence carries more than three glued figures, every number the
prose quotes is the record's, and every small demonstration trains on both labels."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import matplotlib
import pytest

from support import ROOT
from scratchbook.records import objectives, pretraining

matplotlib.use("Agg")
RESULTS = ROOT / "book" / "results"
PAGES = [ROOT / "book" / "13_pretraining.md", ROOT / "book" / "experiments_13.md"]
GLUE = re.compile(r"\{glue:(?:text|md)\}`([a-z0-9_]+)(?::[^`]*)?`")
FIGURE = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")
FIGURES_A_SENTENCE = 3


@pytest.fixture(scope="module")
def glued() -> dict[str, str]:
    """Every value the records' readers glue for these pages, by name."""
    import matplotlib.pyplot as plt

    values: dict[str, str] = {}
    for module in (pretraining, objectives):
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if function.__module__ != module.__name__ or name.startswith("_"):
                continue
            if inspect.signature(function).return_annotation not in ("Shown", pretraining.Shown):
                continue
            keywords = {"draw": False} if "draw" in inspect.signature(function).parameters else {}
            shown = function(RESULTS, **keywords)
            values.update({key: str(value) for key, value in shown.text.items()})
            values.update(shown.markdown)
    plt.close("all")
    return values


def prose(path: Path) -> str:
    """A page's Markdown without its front matter, code cells and directives."""
    text = path.read_text(encoding="utf-8").split("\n---\n", 1)[1]
    return re.sub(r"^(`{3,}).*?^\1\s*$", "", text, flags=re.S | re.M)


def sentences(path: Path) -> list[str]:
    """The page's prose, split into sentences (a list item or a paragraph ends one too)."""
    found = []
    for block in re.split(r"\n\s*\n|\n(?=- )", prose(path)):
        block = " ".join(block.split())
        found += [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z(\[*{`])", block) if s]
    return found


def figures(value: str) -> int:
    return len(FIGURE.findall(value))


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_no_sentence_has_more_than_three_glued_figures(path: Path,
                                                       glued: dict[str, str]) -> None:
    """A glued value counts as many figures as it holds numbers (an interval, two); a value a
    page computes itself, one."""
    crowded = []
    for sentence in sentences(path):
        count = sum(figures(glued[name]) if name in glued else 1
                    for name in GLUE.findall(sentence))
        if count > FIGURES_A_SENTENCE:
            crowded.append(f"{count} figures: {sentence[:160]}")
    assert not crowded, "\n".join(crowded)


def test_every_name_the_appendix_glues_is_read_from_a_record(glued: dict[str, str]) -> None:
    names = set(GLUE.findall(prose(PAGES[1])))
    assert names and not names - set(glued), sorted(names - set(glued))


def test_the_small_demonstrations_train_on_both_labels() -> None:
    """IMDB's training split is sorted by label: a demonstration that takes the first reviews
    of a labelled split trains and validates on one label, and scores 1.00 by guessing. No cell
    of chapter 13 takes a head slice of a split's labels, and the toy fine-tune's draw is
    checked on the page for both labels."""
    text = PAGES[0].read_text(encoding="utf-8")
    assert not re.search(r"_split\.labels\[:\d|train_split\.texts\[:\d", text), (
        "a head slice of a labelled split")
    assert "randperm(len(train_split.labels)" in text
    assert 'assert set(rows.tolist()) == {0, 1}, "the toy\'s reviews must hold both labels"' in text


def test_the_text_is_imdb_or_a_stand_in_that_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from scratchbook import stand_in

    monkeypatch.setattr(stand_in, "book_reviews", lambda: None)
    train, unlabeled, test, kind = stand_in.language_model_splits()
    assert "STAND-IN" in kind and kind != stand_in.REAL_DATA
    assert (len(train.texts), len(test.texts)) == (2_000, 1_020) and unlabeled
