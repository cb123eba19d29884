"""Order pairs found in held-out reviews (the rule of `order_pairs.py`), drawn, split into a
validation half and a test half, and written with their rule, source and provenance to
`book/results/order_pairs_found.json`, before any model is scored on them.

    python tools/records/ch11_order_pairs.py --data $IMDB_DIR

With `--show-check FILE`, the `CHECK_SIZE` pairs drawn for the labelling check are also
written to FILE (keep it outside the repository: the texts are IMDB's), each pair's two texts
in an order drawn at random and named A and B, without the rule's verdict, for a checker to
say which reads as the more positive (A, B or neither). The checker's answers,
`book/results/order_pairs_check.jsonl` (one row a pair: its id and `judged`: `original`,
`swapped` or `neither`), are read back when present, and the record says how often they agree
with the rule.

What this deliberately does not handle: other sources than seed 0's validation slice, and
more than one checker.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import existing_folder, output_file



def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=existing_folder, required=True,
                        help="IMDB's files (train is read)")
    parser.add_argument("--show-check", type=output_file, default=None, metavar="FILE",
                        help="write the check's pairs, blinded, to FILE")
    parser.add_argument("--record", type=output_file, default=None,
                        help="default: book/results/order_pairs_found.json")
    return parser.parse_args(argv)


if __name__ == "__main__":
    ARGUMENTS = parse()

import json
from collections import Counter
from importlib.metadata import version

import numpy as np

from scratchformer.data.imdb import load_imdb
from scratchbook.records import ORDER_PAIRS_FOUND
from scratchformer.io.files import write_atomically

import order_pairs as rule
from scratchbook.commands import shown_path, tool_command

ROW_FIELDS = ("review", "sentence", "kind", "stressed", "x_score", "y_score", "positive_is",
              "review_label", "original_sha256", "swapped_sha256")
JUDGED = ("original", "swapped", "neither")
PROVENANCE = {
    "made_by": "a script: tools/records/order_pairs.py (the rule) run by "
               "tools/records/ch11_order_pairs.py; the texts are IMDB reviewers' sentences "
               "and the same sentences with their two clauses swapped by the script",
    "labelled_by": "the same script: VADER's compound score of each clause read alone "
                   "(vadersentiment, a lexicon rated by people with rules), the construction "
                   "naming the stressed clause; no model of the book",
    "checked_by": "a language model (the one that wrote the rule), on a random sample of "
                  "pairs shown blinded (the two texts in random order, no verdict of the rule "
                  "and no model's score shown): which text reads as the more positive",
    "when": "after every model scored on them was trained: the served Transformer (its ONNX "
            "export committed), the counting models' settings chosen in "
            "book/results/imdb_baselines.json; fixed (rule, size, draw and halves) and "
            "committed before any model was scored on them",
    "shaped_choices": "none when written; its validation half may choose one remedy (the "
                      "scores' record says which), its test half chooses nothing",
}


def source_text() -> str:
    """The source, in words."""
    return (f"IMDB's train split: the {rule.SOURCE_VAL_SIZE} reviews of seed "
            f"{rule.SOURCE_SEED}'s validation slice, held out in blocks "
            f"(scratchformer.data.holdout, validation={rule.SOURCE_HOLDOUT}), as the served "
            "model's run (runs/rv/sentences_seed0) held them out: no scored model trained on "
            "them (the served run validated on them, which chose its checkpoint, and the "
            "served arm was chosen on sentences of them); the counting models scored on "
            "these pairs are fitted on seed 0's fit split, the other 22,500 reviews, as the "
            "taught runs' teacher was")


def rule_text() -> dict:
    """The rule, in words and parameters."""
    return {
        "words": rule.__doc__.split("\n\n")[0].replace("\n", " ") + " " + " ".join(
            rule.__doc__.split("\n\n")[1].split()),
        "constructions": {kind: {"pattern": pattern.pattern, "stressed": stressed}
                          for kind, pattern, stressed in rule.CONSTRUCTIONS},
        "sentence_break": rule.SENTENCE_BREAK.pattern,
        "skipped": {"contrast_words_other_than_one": rule.CONTRAST.pattern,
                    "idioms": rule.IDIOM.pattern, "marks": rule.SKIPPED.pattern,
                    "second_clause_starts": sorted(rule.NOT_A_SUBJECT)},
        "clause_words": list(rule.WORDS),
        "lean": rule.LEAN,
        "scorer": f"vadersentiment {version('vadersentiment')}: "
                  "SentimentIntensityAnalyzer().polarity_scores(clause)['compound']",
        "positive": "the text whose stressed clause has the positive score",
        "same_words": "each pair's two texts hold the same words "
                      "(scratchformer.measure.baselines.review_words), checked",
    }


def blinded(pairs: list[dict], sample: list[int]) -> list[dict]:
    """The check's pairs, each with its texts as A and B in an order drawn at random."""
    generator = np.random.default_rng(rule.CHECK_SEED + 1)
    shown = []
    for place in sample:
        pair = pairs[place]
        first = "original" if generator.random() < 0.5 else "swapped"
        second = "swapped" if first == "original" else "original"
        shown.append({"id": pair["id"], "A": pair[first], "B": pair[second],
                      "A_is": first})
    return shown


def read_check(path: Path, sample_ids: list[int]) -> list[dict] | None:
    """The checker's answers, one per sampled pair, or None if not yet given."""
    if not path.is_file():
        return None
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    if sorted(row["id"] for row in rows) != sorted(sample_ids) or any(
            set(row) != {"id", "judged"} or row["judged"] not in JUDGED for row in rows):
        raise SystemExit(f"{path}: need one row {{id, judged}} for each of the pairs "
                         f"{sample_ids}, judged one of {JUDGED}")
    return rows


def check_summary(rows: list[dict], pairs: list[dict]) -> dict:
    """How often the checker's answers agree with the rule's."""
    by_id = {pair["id"]: pair for pair in pairs}
    outcome = Counter("agrees" if row["judged"] == by_id[row["id"]]["positive_is"]
                      else "neither" if row["judged"] == "neither" else "disagrees"
                      for row in rows)
    judged = outcome["agrees"] + outcome["disagrees"]
    return {"pairs": len(rows), **{k: outcome[k] for k in ("agrees", "disagrees", "neither")},
            "agreement": outcome["agrees"] / len(rows),
            "agreement_where_one_reads_more_positive": outcome["agrees"] / judged}


def main(args: argparse.Namespace, argv: list[str]) -> int:
    record_path = args.record or rule.PAIRS
    train = load_imdb(args.data, ["train"])["train"]
    found = rule.find_pairs(train.texts, train.labels, rule.source_reviews(train.labels))
    if len(found) < rule.SIZE:
        raise SystemExit(f"the rule finds {len(found)} pairs, fewer than {rule.SIZE}")
    chosen, halves = rule.draw(len(found))
    pairs = [{"id": number, **found[place], "half": half}
             for number, (place, half) in enumerate(zip(chosen, halves))]
    sample = rule.check_sample()
    sample_ids = [pairs[place]["id"] for place in sample]
    if args.show_check:
        text = json.dumps(blinded(pairs, sample), indent=1, ensure_ascii=False) + "\n"
        write_atomically(args.show_check, lambda h: h.write(text.encode("utf-8")))
    check = read_check(rule.CHECK, sample_ids)
    record = {
        **tool_command("ch11_order_pairs.py", argv),
        "source": source_text(),
        "rule": rule_text(),
        "provenance": PROVENANCE,
        "found": len(found),
        "size": rule.SIZE,
        "draw": {"seed": rule.DRAW_SEED, "how": "numpy default_rng(seed): choice of size "
                 "places of the found pairs (in source order) without replacement, sorted; "
                 "then a permutation of the size, whose first half is the validation half"},
        "halves": dict(Counter(halves)),
        "kinds": dict(Counter(pair["kind"] for pair in pairs)),
        "positive_is": dict(Counter(pair["positive_is"] for pair in pairs)),
        "stressed_positive_as_review": sum(
            (pair["positive_is"] == "original") == (pair["review_label"] == 1)
            for pair in pairs),
        "check": {"sample": {"size": rule.CHECK_SIZE, "seed": rule.CHECK_SEED,
                             "ids": sample_ids},
                  "file": shown_path(rule.CHECK),
                  "how": "each sampled pair's two texts shown as A and B in an order drawn "
                         f"with seed {rule.CHECK_SEED + 1}, alone, without the rule's "
                         "verdict or any score; the checker names the one that reads as the "
                         "more positive, or neither (both read alike, or the swap makes no "
                         "sense)",
                  "result": check_summary(check, pairs) if check else None},
        "pairs": [{key: pair[key] for key in ("id", *ROW_FIELDS, "half")} for pair in pairs],
    }
    ORDER_PAIRS_FOUND.write(record, record_path)
    print(f"{len(found)} pairs found, {rule.SIZE} drawn: {record['halves']}; "
          f"check: {record['check']['result']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
