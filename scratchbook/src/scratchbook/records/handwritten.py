"""Chapter 11's reviews and pairs written for the book: the record
`book/results/handwritten_reviews.json` (written by `tools/records/ch11_handwritten.py`),
checked and laid out as the tables of the appendix "Experiments behind chapter 11".

The record holds 80 short reviews and 30 minimal pairs whose two texts hold the same words in
another order, all written for the book by a language model (`WRITTEN_REVIEWS.provenance` says
when: after the first served model, and read on every served model since, so they are not held
out), each scored by the served Transformer, bag-of-words logistic regression and NBSVM. `read_handwritten` reads and checks it; `accuracy_by_kind` and
`pairs_ordered` are the two tables; `accuracy_difference` compares two models review by
review, `confident_errors` counts the confidently wrong; `handwritten_figures` the numbers
the prose glues.

Written by hand, not exported. What this deliberately does not handle: records of other
models than the three the script scores, and recomputing the scores (the script does that).
"""

from __future__ import annotations

import math
from pathlib import Path

from IPython.display import Markdown

from scratchformer.measure.statistics import interval_text, paired_difference
from scratchbook.pages import markdown_table
from scratchbook.record import RecordError
from scratchbook.records import HANDWRITTEN_REVIEWS

MODELS = ("transformer", "bag_of_words", "nbsvm")
REVIEW_KINDS = ("plain", "negation", "contrast", "expectation", "short")
PAIR_KINDS = ("negation", "contrast", "expectation", "comparison")
OUTCOMES = ("ordered", "tied", "reversed", "pairs")


def require(found: bool, problem: str, path: Path) -> None:
    """Raise a RecordError naming the record and what is wrong with it unless `found`."""
    if not found:
        raise RecordError(f"{path}: {problem}; rewrite it with "
                         "`python tools/records/ch11_handwritten.py`")


def check_record(record: object, path: Path) -> dict:
    """`record` if it has the shape the tables read: the three models, their accuracy
    overall and per kind of review, their pair counts overall and per kind of pair, and the
    scored reviews and pairs; a RecordError naming the first missing piece otherwise."""
    require(isinstance(record, dict), "not a JSON object", path)
    for key in ("command", "models", "reviews", "accuracy", "pairs", "pairs_ordered"):
        require(key in record, f"no {key!r}", path)
    for model in MODELS:
        require(model in record["models"] and "name" in record["models"][model]
                and "threshold" in record["models"][model],
                f"models has no {model!r} with a name and a threshold", path)
        accuracy = record["accuracy"].get(model, {})
        for kind in ("overall", *REVIEW_KINDS):
            require(set(accuracy.get(kind, {})) >= {"right", "reviews", "accuracy"},
                    f"accuracy of {model!r} has no right/reviews/accuracy for {kind!r}", path)
        ordered = record["pairs_ordered"].get(model, {})
        for kind in ("overall", *PAIR_KINDS):
            require(set(ordered.get(kind, {})) >= set(OUTCOMES),
                    f"pairs_ordered of {model!r} has no {'/'.join(OUTCOMES)} for {kind!r}",
                    path)
    for review in record["reviews"]:
        require(set(review) >= {"text", "label", "kind", "scores"}
                and set(review["scores"]) >= set(MODELS),
                f"a review lacks its text, label, kind or a model's score: {review}", path)
    for pair in record["pairs"]:
        require(set(pair) >= {"positive", "negative", "kind", "scores"}
                and all(set(pair["scores"].get(m, {})) >= {"positive", "negative"}
                        for m in MODELS),
                f"a pair lacks its texts, kind or a model's two scores: {pair}", path)
    return record


def read_handwritten(path: Path | None = None) -> dict:
    """The record (by default the book's `handwritten_reviews.json`), read and checked."""
    return check_record(HANDWRITTEN_REVIEWS.read(path), HANDWRITTEN_REVIEWS.locate(path))


def share(right: int, total: int) -> str:
    """`right/total (pp.p%)`."""
    return f"{right}/{total} ({100 * right / total:.1f}%)"


def accuracy_by_kind(record: dict) -> Markdown:
    """Each model's hand-written reviews right, overall (with its share) and per kind of
    review (a count: each kind is a few reviews)."""
    header = ["model", "all", *REVIEW_KINDS]
    counts = {model: {kind: (record["accuracy"][model][kind]["right"],
                             record["accuracy"][model][kind]["reviews"])
                      for kind in ("overall", *REVIEW_KINDS)} for model in MODELS}
    rows = [[record["models"][model]["name"], share(*counts[model]["overall"]),
             *(f"{right}/{total}" for right, total in
               (counts[model][kind] for kind in REVIEW_KINDS))]
            for model in MODELS]
    return markdown_table(header, rows)


def pairs_both_right(record: dict, model: str) -> int:
    """The order pairs whose two texts `model` both gets right: the positive one above its
    threshold, the negative one not."""
    threshold = record["models"][model]["threshold"]
    return sum(pair["scores"][model]["positive"] > threshold
               >= pair["scores"][model]["negative"] for pair in record["pairs"])


def pairs_ordered(record: dict, by_kind: bool = False) -> Markdown:
    """Each model's order pairs ordered (the positive text scored strictly higher), tied and
    reversed, and the pairs whose two texts it gets right; with `by_kind`, the pairs ordered
    per kind of pair instead (the page's column is too narrow for both)."""
    rows = []
    for model in MODELS:
        counts = record["pairs_ordered"][model]
        total = counts["overall"]["pairs"]
        cells = ([f"{counts[kind]['ordered']}/{counts[kind]['pairs']}" for kind in PAIR_KINDS]
                 if by_kind else [*(f"{counts['overall'][o]}/{total}" for o in OUTCOMES[:3]),
                                  f"{pairs_both_right(record, model)}/{total}"])
        rows.append([record["models"][model]["name"], *cells])
    header = (["model", *(f"{kind}: ordered" for kind in PAIR_KINDS)] if by_kind
              else ["model", "ordered", "tied", "reversed", "both texts right"])
    return markdown_table(header, rows)


def confident_errors(record: dict, model: str, above: float = 0.9) -> tuple[int, int]:
    """(errors, errors with a probability above `above` for the wrong label) of a model
    whose score is a probability, on the hand-written reviews."""
    if record["models"][model]["threshold"] != 0.5:
        raise ValueError(f"{model}'s score is not a probability: "
                         f"{record['models'][model].get('score')}")
    wrong = [review["scores"][model] for review in record["reviews"]
             if (review["scores"][model] > 0.5) != review["label"]]
    return len(wrong), sum(max(p, 1 - p) > above for p in wrong)


def accuracy_difference(record: dict, model: str, other: str) -> dict:
    """`model`'s accuracy minus `other`'s on the same hand-written reviews, in points, with
    its 95% t-interval (`paired_difference` of the per-review differences of being right:
    -100, 0 or +100). With 0/1 outcomes the t-interval is an approximation, fair for tens of
    reviews, and it says nothing about reviews unlike these."""
    for name in (model, other):
        if name not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, got {name!r}")

    def right(name: str, review: dict) -> float:
        verdict = int(review["scores"][name] > record["models"][name]["threshold"])
        return 100.0 * (verdict == review["label"])

    return paired_difference([right(model, r) for r in record["reviews"]],
                             [right(other, r) for r in record["reviews"]])


def handwritten_figures(record: dict) -> dict[str, str]:
    """The numbers the prose quotes, as text: each model's accuracy and pairs ordered, the
    counts of reviews and pairs, and the gap from the Transformer to NBSVM in points."""
    figures = {"handwritten_reviews": str(len(record["reviews"])),
               "handwritten_pairs": str(len(record["pairs"]))}
    for model in MODELS:
        overall = record["accuracy"][model]["overall"]
        figures[f"handwritten_{model}_accuracy"] = f"{100 * overall['accuracy']:.1f}%"
        figures[f"handwritten_{model}_right"] = f"{overall['right']}"
        ordered = record["pairs_ordered"][model]["overall"]
        figures[f"pairs_{model}_ordered"] = str(ordered["ordered"])
        figures[f"pairs_{model}_tied"] = str(ordered["tied"])
    gap = (record["accuracy"]["nbsvm"]["overall"]["accuracy"]
           - record["accuracy"]["transformer"]["overall"]["accuracy"])
    figures["handwritten_nbsvm_minus_transformer"] = f"{100 * gap:.1f}"
    return figures


def reading_figures(record: dict) -> dict[str, str]:
    """Every number chapter 11's two sections on these texts quote, as text keyed by glue
    name: `handwritten_figures`, the review-by-review intervals, the confident errors, a few
    reviews' scores, the pairs' outcomes and a fair coin's central 95% of pairs ordered.

    Refuses (ValueError) a record that no longer supports what the prose says: the served
    model behind NBSVM and ahead of bag of words, both intervals holding zero; some of the
    served model's errors, and none of bag of words', with conviction (the served model is the
    more often sure when wrong); bag of words tying every pair; the served model ordering fewer
    pairs than the low end of a coin's 95% range and reversing more than it orders (it reads
    the pairs backwards), and giving most pairs' two texts one verdict; NBSVM ordering more,
    and both texts right more often.

    Described in the appendix "Experiments behind chapter 11", "Reviews and pairs written for
    the book"."""
    figures = handwritten_figures(record)
    served_gap = accuracy_difference(record, "transformer", "nbsvm")
    bag_gap = accuracy_difference(record, "transformer", "bag_of_words")
    figures["handwritten_gap_nbsvm"] = interval_text(served_gap, digits=1)
    figures["handwritten_gap_bag"] = interval_text(bag_gap, digits=1)
    errors, confident = confident_errors(record, "transformer")
    bag_errors, bag_confident = confident_errors(record, "bag_of_words")
    figures |= {"served_errors": str(errors), "served_confident_errors": str(confident),
                "bag_errors": str(bag_errors), "bag_confident_errors": str(bag_confident)}
    scores = {review["text"]: review["scores"]["transformer"] for review in record["reviews"]}
    for name, text in (("served_meh", "Meh."), ("served_not_bad", "Not bad at all."),
                       ("served_skip", "Skip it.")):
        figures[name] = f"{scores[text]:.4g}"
    ordered = {model: record["pairs_ordered"][model]["overall"] for model in MODELS}
    pairs = ordered["transformer"]["pairs"]
    at_most = [sum(math.comb(pairs, i) for i in range(k + 1)) / 2 ** pairs
               for k in range(pairs + 1)]
    coin_low = min(k for k in range(pairs + 1) if at_most[k] > 0.025)
    coin_high = min(k for k in range(pairs + 1) if at_most[k] >= 0.975)
    served = record["pairs"]
    same_verdict = sum((p["scores"]["transformer"]["positive"] > 0.5)
                       == (p["scores"]["transformer"]["negative"] > 0.5) for p in served)
    both_right = {model: pairs_both_right(record, model) for model in MODELS}
    figures |= {"coin_range": f"{coin_low} to {coin_high}", "coin_mean": str(pairs // 2),
                "pairs_transformer_reversed": str(ordered["transformer"]["reversed"]),
                "pairs_nbsvm_reversed": str(ordered["nbsvm"]["reversed"]),
                "pairs_nbsvm_both_right": str(both_right["nbsvm"]),
                "pairs_transformer_both_right": str(both_right["transformer"]),
                "pairs_transformer_same_verdict": f"{same_verdict} of the {pairs}"}
    claims = {
        "served model behind NBSVM, interval holding zero":
            served_gap["low"] < served_gap["mean"] < 0 < served_gap["high"],
        "served model ahead of bag of words, interval holding zero":
            bag_gap["low"] < 0 < bag_gap["mean"] < bag_gap["high"],
        "some served errors confident, no bag-of-words error":
            confident > 0 and bag_confident == 0,
        "bag of words ties every pair": ordered["bag_of_words"]["tied"] == pairs,
        "served model orders fewer than a coin's low end":
            ordered["transformer"]["ordered"] < coin_low,
        "served model reverses more than it orders":
            ordered["transformer"]["reversed"] > ordered["transformer"]["ordered"],
        "most pairs one verdict": 2 * same_verdict > pairs,
        "NBSVM orders more and gets both right more":
            ordered["nbsvm"]["ordered"] > ordered["transformer"]["ordered"]
            and both_right["nbsvm"] > both_right["transformer"],
    }
    broken = [claim for claim, holds in claims.items() if not holds]
    if broken:
        raise ValueError(f"the record no longer supports chapter 11's reading: {broken}")
    return figures
