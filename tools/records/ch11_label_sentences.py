"""Chapter 11's validation sentences, handed to two annotators and their labels gathered. The
annotators were two language models, working independently, each given the written guide
`labelling_guide.md` beside this file; no person labelled the sentences.

`draw` writes, for each of `--seeds`, `labelled_sentences.PER_SEED` of the seed's validation
sentences (the ones `ch11_sentences.py` scores), shuffled together under neutral ids into
`--chunks` files of text for the annotators to read (`chunk<n>.tsv`: id, a tab, the sentence), and
the key from id to seed and place (`key.json`) beside them; annotators see neither the seed nor
the review's label. Each annotator answers a chunk with a file of lines `id<TAB>label`, a label
of `positive`, `negative` or `none`. `gather` reads two such answers for every id and writes
`book/results/sentences_labelled.jsonl` (no text: the sentences are IMDB's).

    python tools/records/ch11_label_sentences.py draw --data $IMDB_DIR --cache runs/cache \
        --seeds 0 1 2 3 4 --chunks 4 --out /tmp/labelling
    python tools/records/ch11_label_sentences.py gather --out /tmp/labelling \
        --answers /tmp/labelling/chunk*_[ab].tsv

What this deliberately does not handle: an annotator's second thoughts (one answer per id
and annotator), and more than two annotators.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from labelled_sentences import (LABEL_WORDS, LABELS, drawn, sentence_text, text_sha256,
                                validation_sentences)
from scratchbook.arguments import existing_file, existing_folder, positive_int, refuse


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line: `draw` or `gather`, each with its folder."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    steps = parser.add_subparsers(dest="step", required=True)
    draw = steps.add_parser("draw", help="write the sentences for labelling")
    draw.add_argument("--data", type=existing_folder, required=True, help="IMDB's files")
    draw.add_argument("--cache", type=Path, required=True, help="the token cache")
    draw.add_argument("--seeds", type=int, nargs="+", required=True)
    draw.add_argument("--chunks", type=positive_int, default=4)
    draw.add_argument("--out", type=Path, required=True, help="a new folder")
    gather = steps.add_parser("gather", help="gather two annotators' answers")
    gather.add_argument("--out", type=existing_folder, required=True, help="draw's folder")
    gather.add_argument("--answers", type=existing_file, nargs="+", required=True)
    return parser.parse_args(argv)


def draw(args: argparse.Namespace) -> None:
    """The chunks to label and the key, written to the new folder `--out`."""
    from scratchformer.data.imdb import load_imdb
    from scratchformer.data.review_cache import review_tokens
    from scratchformer.train.presets import preset

    train = load_imdb(args.data, ["train"])["train"]
    tokens = review_tokens(train, args.cache)
    val_size = preset("cpu")[1].val_size
    entries = []
    for seed in args.seeds:
        sentences, _ = validation_sentences(train.labels, tokens, seed, "blocks", val_size)
        for index in drawn(len(sentences), seed):
            text = sentence_text(sentences[index])
            entries.append({"seed": seed, "index": index, "sha256": text_sha256(text),
                            "text": " ".join(text.split())})
    order = np.random.default_rng(12).permutation(len(entries)).tolist()
    args.out.mkdir(parents=True)
    key = {}
    shuffled = [(f"q{position:04d}", entries[place]) for position, place in enumerate(order)]
    for chunk, names in enumerate(np.array_split(np.arange(len(shuffled)), args.chunks)):
        lines = []
        for name, entry in (shuffled[i] for i in names.tolist()):
            key[name] = {k: entry[k] for k in ("seed", "index", "sha256")}
            lines.append(f"{name}\t{entry['text']}\n")
        (args.out / f"chunk{chunk}.tsv").write_text("".join(lines), encoding="utf-8")
    (args.out / "key.json").write_text(json.dumps(key, indent=1), encoding="utf-8")
    print(f"{len(entries)} sentences in {args.chunks} chunks under {args.out}")


def gather(args: argparse.Namespace) -> None:
    """Two labels for every id of the key, written as the labelled sentences' file."""
    from scratchbook.records import SENTENCES_LABELLED

    if not (args.out / "key.json").is_file():
        refuse(f"{args.out} holds no key.json: gather reads the folder draw wrote")
    key = json.loads((args.out / "key.json").read_text(encoding="utf-8"))
    labels: dict[str, list[str]] = {name: [] for name in key}
    for path in args.answers:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            name, _, label = line.strip().partition("\t")
            if name not in key or label.strip() not in LABEL_WORDS:
                refuse(f"{path}:{number}: expected an id of the key, a tab and one of "
                       f"{LABEL_WORDS}, got {line!r}")
            labels[name].append(label.strip())
    wrong = [name for name, given in labels.items() if len(given) != 2]
    if wrong:
        refuse(f"{len(wrong)} ids without exactly two labels, the first {wrong[0]}")
    rows = sorted(({**key[name], "labels": given} for name, given in labels.items()),
                  key=lambda row: (row["seed"], row["index"]))
    SENTENCES_LABELLED.write(rows)
    agreed = sum(row["labels"][0] == row["labels"][1] for row in rows)
    print(f"{len(rows)} sentences, the two labels agree on {agreed}; written to {LABELS}")


if __name__ == "__main__":
    arguments = parse()
    if arguments.step == "draw" and arguments.out.exists():
        refuse(f"{arguments.out} exists: draw writes a new folder")
    (draw if arguments.step == "draw" else gather)(arguments)
    sys.exit(0)
