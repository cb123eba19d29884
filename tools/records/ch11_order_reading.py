"""How the served Transformer reads an order pair: its own attention and each token's exact
contribution (`scratchformer.measure.evaluation.token_contributions`, chapter 11's "Why it
errs, token by token") on both texts of a pair.

For every pair of the validation half of `book/results/order_pairs_found.json` and of the 30
written pairs, each text is framed as the box frames it (one window: `[CLS] tokens [SEP]`),
its tokens assigned to the first clause, the connective or the second clause by where they
sit in the text, and the model's logit gap split into the tokens' contributions, summed per
clause. A clause keeps its words when the pair swaps it from one place to the other; what
changes is its place and what it attends to. So the record gives, over the pairs: how much a
clause pushes towards its own lean (by VADER's sign, as the rule scores it; for the written
pairs, by which text is positive) when it stands first and when it stands second, and when it
is the stressed clause and when not; and the attention (each head, one layer) that the
tokens pay to the connective and to the other clause. For four written pairs (texts written
for the book) it keeps every token with its contribution and its head-averaged attention to
the connective. The model is the served one, its weights read from the committed ONNX file
(`served_weights.py`; the training checkpoint is not kept); the attention is recomputed from
the layer's own weights and checked against the layer's output, and both the contributions and
the attention are checked against what the ONNX file itself outputs for the same text.

    python tools/records/ch11_order_reading.py --data $IMDB_DIR

What this deliberately does not handle: texts longer than one window, models of more than
one layer (the attention read is the first layer's), and IMDB's texts in the record (only
numbers over them).
"""

from __future__ import annotations

import argparse
import sys

from scratchbook.arguments import existing_folder, output_file

from scratchbook.records import ORDER_PAIRS, ORDER_PAIRS_READING


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked before torch is imported."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=existing_folder, required=True)
    parser.add_argument("--record", type=output_file, default=ORDER_PAIRS_READING.path)
    return parser.parse_args(argv)


if __name__ == "__main__":
    ARGUMENTS = parse()

import json
import math
import re

import numpy as np
import torch

from scratchformer.data.framing import frame_tokens, review_encoding, review_token_lists
from scratchformer.data.imdb import load_imdb
from scratchformer.measure.evaluation import token_contributions

import order_pairs as rule
from onnx_reviews import framed_rows, one_thread_session
from served_weights import FOLDER, served_model
from scratchbook.commands import shown_path, tool_command

WRITTEN = ORDER_PAIRS.path
EXAMPLES = 4  # written pairs kept token by token


@torch.no_grad()
def read_text(model: torch.nn.Module, text: str) -> dict:
    """The text framed in one window: tokens, each token's character span, contributions,
    the logit gap, and the first layer's attention `(H, T, T)`, checked against the layer."""
    tokens = review_token_lists([text])[0]
    if len(tokens) + 2 > model.config.max_len:
        raise SystemExit(f"a text of {len(tokens)} tokens does not fit one window")
    ids = torch.tensor([frame_tokens(tokens, len(tokens) + 2, "head")])  # (1, T)
    shares = token_contributions(model, ids)[0]  # (T,)
    gap = model(ids)[0].float()
    bias = model.classifier.bias
    if not math.isclose(float(shares.sum() + bias[1] - bias[0]), float(gap[1] - gap[0]),
                        abs_tol=1e-4):
        raise SystemExit("the contributions do not add up to the logit gap")
    block = model.encoder.blocks[0]
    attention = block.attn
    x = block.ln1(model.encoder.embedding(ids))  # (1, T, C)
    queries = attention.split_heads(attention.W_query(x))  # (1, H, T, d)
    keys = attention.split_heads(attention.W_key(x))
    values = attention.split_heads(attention.W_value(x))
    weights = torch.softmax(queries @ keys.transpose(-2, -1) / math.sqrt(attention.head_dim),
                            dim=-1)  # (1, H, T, T)
    output = attention.out_proj(attention.merge_heads(weights @ values))
    if not torch.allclose(output, attention(x), atol=1e-5):
        raise SystemExit("the recomputed attention is not the layer's")
    decode = review_encoding().decode
    spans, at = [], 0
    cleaned = " ".join(text.split())
    for token in tokens:
        piece = decode([token])
        start = cleaned.find(piece.strip(), at) if piece.strip() else at
        start = at if start < 0 else start
        spans.append((start, start + len(piece.strip())))
        at = max(at, spans[-1][1])
    return {"tokens": [decode([t]) for t in tokens], "spans": spans,
            "contributions": shares[1:-1].tolist(),  # the real tokens, [CLS] and [SEP] apart
            "special": [float(shares[0]), float(shares[-1])],
            "gap": float(gap[1] - gap[0]), "attention": weights[0, :, 1:-1, 1:-1].numpy(),
            "positive": float(torch.softmax(gap, -1)[1])}


def clause_of(spans: list[tuple[int, int]], first: tuple[int, int],
              second: tuple[int, int]) -> list[str]:
    """Each token's part of the text: `first` clause, `second` clause, or `joint` (the
    connective and marks between and around them)."""
    parts = []
    for start, end in spans:
        middle = (start + end) / 2
        parts.append("first" if first[0] <= middle < first[1] else
                     "second" if second[0] <= middle < second[1] else "joint")
    return parts


def found_clauses(pair: dict) -> dict[str, tuple]:
    """For a found pair's original and swapped text: the character spans of its first and
    second clause and the place (`first` or `second`) its construction stresses, which is
    the same in both (the swap moves the clauses, not the stress)."""
    parts = rule.construction(pair["original"])
    if parts is None:
        raise SystemExit("a pair's original text is no longer a construction of the rule")
    found, y = parts["found"], parts["y"]
    stressed = "second" if parts["stressed"] == "y" else "first"
    if parts["kind"] == "although first":  # "Although Y, X."
        start = len(found["word"]) + 1
        swapped = ((start, start + len(y)), (start + len(y) + 2,
                                             len(pair["swapped"]) - len(found["end"])))
    else:  # "Y, but X."
        start = len(y) + len(found["comma"]) + len(found["word"]) + 2
        swapped = ((0, len(y)), (start, len(pair["swapped"]) - len(found["end"])))
    return {pair["original"]: (found.span("x"), found.span("y"), stressed),
            pair["swapped"]: (*swapped, stressed)}


def written_clauses(text: str) -> tuple[tuple[int, int], tuple[int, int], None]:
    """A written pair's clauses: the text cut at its first comma, semicolon, colon or 'but'
    (the written pairs are each two short clauses)."""
    cut = re.search(r"[,;:]|\bbut\b|\band\b", text)
    if cut is None:
        return (0, len(text)), (len(text), len(text)), None
    return (0, cut.start()), (cut.end(), len(text.rstrip(".!?"))), None


def clause_push(reading: dict, parts: list[str]) -> dict[str, float]:
    """Each part's summed contribution."""
    sums = {"first": 0.0, "joint": 0.0, "second": 0.0}
    for part, value in zip(parts, reading["contributions"]):
        sums[part] += value
    return sums


def attention_shares(reading: dict, parts: list[str]) -> dict[str, list[float]]:
    """Per head: the mean attention a token pays to the joint (connective and marks), and a
    clause's tokens to the other clause."""
    weights = reading["attention"]  # (H, T, T)
    part = np.array(parts)
    joint = part == "joint"
    first, second = part == "first", part == "second"
    to_joint = weights[:, :, joint].sum(-1).mean(-1)  # (H,)
    across = (weights[:, first][:, :, second].sum(-1).mean(-1)
              + weights[:, second][:, :, first].sum(-1).mean(-1)) / 2
    return {"to_joint": to_joint.tolist(), "to_other_clause": across.tolist(),
            "tokens_in_joint": int(joint.sum()), "tokens": len(parts)}


def pair_reading(model: torch.nn.Module, positive: str, negative: str, clauses) -> dict:
    """Both texts of a pair read, with each part's summed contributions and the attention;
    `clauses(text)` gives a text's clause spans and stressed place."""
    texts = {"positive": positive, "negative": negative}
    out = {}
    for member, text in texts.items():
        first, second, stressed = clauses(text)
        reading = read_text(model, text)
        parts = clause_of(reading["spans"], first, second)
        out[member] = {"reading": reading, "parts": parts,
                       "push": clause_push(reading, parts), "stressed": stressed,
                       "attention": attention_shares(reading, parts)}
    return out


def mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else float("nan")


def found_summary(model: torch.nn.Module, pairs: list[dict]) -> dict:
    """Over the found pairs: a clause's push towards its lean (VADER's sign) by place and by
    stress, the two texts' gap, and the attention paid to the joint and across."""
    first_push, second_push, stressed_push, other_push = [], [], [], []
    to_joint, across = [], []
    for pair in pairs:
        read = pair_reading(model, pair["positive"], pair["negative"],
                            found_clauses(pair).__getitem__)
        for member in ("positive", "negative"):
            is_original = (member == "positive") == (pair["positive_is"] == "original")
            x_lean = math.copysign(1, pair["x_score"])
            # the first clause of the original is x; of the swapped text, y (lean -x)
            lean_first = x_lean if is_original else -x_lean
            push = read[member]["push"]
            first_push.append(lean_first * push["first"])
            second_push.append(-lean_first * push["second"])
            stressed = read[member]["stressed"]
            stressed_push.append((lean_first if stressed == "first" else -lean_first)
                                 * push[stressed])
            unstressed = "second" if stressed == "first" else "first"
            other_push.append((lean_first if unstressed == "first" else -lean_first)
                              * push[unstressed])
            to_joint.append(read[member]["attention"]["to_joint"])
            across.append(read[member]["attention"]["to_other_clause"])
    return {"pairs": len(pairs), "texts": 2 * len(pairs),
            "stressed_second": sum(p["stressed"] == "y" for p in pairs),
            "push_towards_lean": {
                "first_clause": mean(first_push), "second_clause": mean(second_push),
                "stressed_clause": mean(stressed_push), "other_clause": mean(other_push),
                "unit": "logit-gap units: a clause's summed token contributions times the "
                        "sign of its VADER lean (positive: it pushes the way it leans)"},
            "attention_per_head": {"to_joint": np.mean(to_joint, axis=0).tolist(),
                                   "to_other_clause": np.mean(across, axis=0).tolist()}}


def example(model: torch.nn.Module, pair: dict) -> dict:
    """A written pair token by token: contributions and head-averaged attention to the
    joint."""
    read = pair_reading(model, pair["positive"], pair["negative"], written_clauses)
    out = {"kind": pair["kind"]}
    for member in ("positive", "negative"):
        reading, parts = read[member]["reading"], read[member]["parts"]
        joint = np.array(parts) == "joint"
        to_joint = reading["attention"][:, :, joint].sum(-1).mean(0)  # (T,)
        out[member] = {"text": pair[member], "P_positive": reading["positive"],
                       "gap": reading["gap"],
                       "tokens": [{"token": t, "part": p, "contribution": c,
                                   "attention_to_joint": float(a)}
                                  for t, p, c, a in zip(reading["tokens"], parts,
                                                        reading["contributions"], to_joint)],
                       "push": read[member]["push"]}
    return out


def onnx_check(model: torch.nn.Module, texts: list[str]) -> dict:
    """The ONNX file's own contributions and attention on `texts` beside the rebuilt
    model's: the largest differences."""
    session = one_thread_session(FOLDER / "model.onnx")
    framing = json.loads((FOLDER / "tokenizer.json").read_text())["framing"]
    worst_share, worst_attention = 0.0, 0.0
    for text in texts:
        mine = read_text(model, text)
        row = framed_rows(review_token_lists([text])[0], framing)[0]
        _, shares, attention = session.run(["probabilities", "contributions", "attention"],
                                           {"ids": np.array([row], dtype=np.int64)})
        t = len(mine["contributions"])
        # the box's row is padded to max_len; the real tokens sit at 1..t
        worst_share = max(worst_share, float(np.abs(shares[0, 1:t + 1]
                                                    - mine["contributions"]).max()))
        worst_attention = max(worst_attention, float(np.abs(
            attention[0, 0, :, 1:t + 1, 1:t + 1]
            / attention[0, 0, :, 1:t + 1, 1:t + 1].sum(-1, keepdims=True)
            - mine["attention"] / mine["attention"].sum(-1, keepdims=True)).max()))
    return {"texts": len(texts), "largest_contribution_difference": worst_share,
            "largest_attention_difference": worst_attention,
            "note": "attention compared over the real tokens' rows renormalised (the box's "
                    "row also attends to [CLS] and [SEP], as does this one)"}


def seen(summary: dict) -> str:
    """What the numbers show, in one sentence computed from them."""
    push = summary["push_towards_lean"]
    heads = summary["attention_per_head"]["to_joint"]
    stress = ("raises" if push["stressed_clause"] > push["other_clause"] else "lowers")
    place = ("first" if push["first_clause"] > push["second_clause"] else "second")
    return (f"Over the {summary['pairs']} validation-half pairs, a clause pushes towards its "
            f"own lean by {push['first_clause']:.3f} (logit-gap units) when it stands first "
            f"and {push['second_clause']:.3f} when it stands second, by "
            f"{push['stressed_clause']:.3f} when the construction stresses it and "
            f"{push['other_clause']:.3f} when not: the model weighs the {place} clause more "
            f"and the stress {stress} a clause's weight (the construction stresses the second "
            f"clause in {summary['stressed_second']} of the {summary['pairs']} pairs, so "
            "place and stress mostly coincide here); its two heads give the connective "
            f"and the marks between the clauses {heads[0]:.1%} and {heads[1]:.1%} of a "
            "token's attention.")


def main(args: argparse.Namespace, argv: list[str]) -> int:
    torch.set_num_threads(1)
    model, served = served_model()
    train = load_imdb(args.data, ["train"])["train"]
    found = [p for p in rule.pair_texts(rule.read_pairs(), train.texts, train.labels)
             if p["half"] == "validation"]
    written = [json.loads(line) for line in WRITTEN.read_text().splitlines() if line.strip()]
    summary = found_summary(model, found)
    chosen = written[::len(written) // EXAMPLES][:EXAMPLES]
    examples = [example(model, pair) for pair in chosen]
    record = {
        **tool_command("ch11_order_reading.py", argv),
        "model": served,
        "onnx_check": onnx_check(model, [t for pair in chosen
                                         for t in (pair["positive"], pair["negative"])]),
        "pairs": {"found": shown_path(rule.PAIRS), "half": "validation",
                  "written": shown_path(WRITTEN)},
        "method": " ".join(__doc__.split("\n\n")[1].split()),
        "found_validation": summary,
        "reading": seen(summary),
        "examples": examples,
    }
    ORDER_PAIRS_READING.write(record, args.record)
    print(json.dumps({"onnx_check": record["onnx_check"], **summary}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
