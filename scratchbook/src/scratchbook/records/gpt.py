"""What chapter 12 and its appendix "Experiments behind chapter 12" show of the chapter's
recorded runs. The chapter: one table of held-out bits per byte against the counting models,
the first step of the four decoding rules, the key/value cache's timings, and what it quotes
of the full run and of the reviews written on request. The appendix: the full CPU run
and its curve, the held-out scores with the n-gram orders and their paired intervals, the
3,000-step run, the recorded samples, the reviews on demand and their judge, and the
sentiment-token likelihood test. (The stand-in text the chapter reads without IMDB is
`scratchbook.stand_in`'s.)

Written by hand, not exported. Each function reads a record from `book/results/`, checks what
the prose says of it, glues the numbers the prose quotes, and returns the table (Markdown) the
page shows. What this module deliberately does not handle: records from other machines'
layouts (the paths are the repository's), and recomputing any record (the commands that made
them are printed beside each table, or kept in the records the page names).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Markdown
from myst_nb import glue

from scratchformer.data.imdb import ReviewSplit
from scratchformer.measure.statistics import interval_text, paired_difference
from scratchbook.pages import Code, escaped_table, glue_count, glue_md
from scratchbook.records import (GPT_CPU, GPT_CPU_3000_STEPS, GPT_CPU_SENTIMENT,
                                 GPT_CPU_SENTIMENT_TOKEN, GPT_KV_CACHE, GPT_NGRAMS, GPT_REVIEWS,
                                 GPT_SAMPLING, IMDB_CPU, IMDB_CPU_PREDICTIONS, IMDB_TAUGHT_BLOCKS)
from scratchformer.runs.hardware import busy_note

SAMPLING_RULES = ["greedy", "temperature", "top_k", "top_p"]  # the files' names, in order
RULE_NAMES = ["greedy", "temperature 0.7", "top-k, k = 5", "top-p, p = 0.9"]
REVIEW_MODELS = {"pretrained": "the full run's model",
                 "finetuned": "fine-tuned on labelled reviews"}
NGRAM_RUNS = ("gpt_cpu", "gpt_s0", "gpt_s1")  # the full run, then two runs without labels
ORDERS = ("Kneser-Ney 2-gram", "Kneser-Ney 3-gram", "Kneser-Ney 4-gram")
ORDER_ZH = {"2": "二", "3": "三", "4": "四"}


def served_unlabelled(results: Path) -> None:
    """Glue `served_unlabelled`: how many unlabelled reviews chapter 11's served model learned
    from besides the labelled ones (`imdb_taught_blocks.json`, the arm the book serves).

    Described in chapter 12, section "The reviews as training text"."""
    taught = IMDB_TAUGHT_BLOCKS.read(results)
    served_runs = taught["runs"][taught["best_transformer_test_accuracy"]["arm"]].values()
    unlabelled = {run["unlabelled"] for run in served_runs}
    assert len(unlabelled) == 1, "every seed of the served arm read the same reviews"
    glue_count("served_unlabelled", unlabelled.pop())


def overlap_counts(train_split: ReviewSplit, unlabeled: list[str], test_split: ReviewSplit,
                   documents: list) -> dict[str, int]:
    """How many texts the splits share, and how many documents the language model may read;
    each count glued as `overlap_<its name>`.

    Described in chapter 12, section "What the model may read"."""
    test_texts = set(test_split.texts)
    train_texts = set(train_split.texts)
    overlap = {
        "unlabelled rows": len(unlabeled),
        "distinct unlabelled texts": len(set(unlabeled)),
        "unlabelled texts that are also test reviews": len(set(unlabeled) & test_texts),
        "unlabelled texts that are also training reviews": len(set(unlabeled) & train_texts),
        "training texts that are also test reviews": len(train_texts & test_texts),
        "documents for the language model": len(documents),
        "of which labelled": sum(d.label is not None for d in documents),
    }
    for name, count in overlap.items():
        glue(f"overlap_{name.replace(' ', '_')}", count, display=False)
    return overlap


def full_cpu_run(results: Path) -> dict:
    """The full CPU run's record (`gpt_cpu.json`), its command printed and its numbers glued,
    in English and in the Chinese edition's words (`*_zh`).

    Described in the appendix "Experiments behind chapter 12", section "The full CPU run";
    chapter 12 quotes its length and what it read."""
    cpu_run = GPT_CPU.read(results)
    seconds = cpu_run["seconds"]
    history = cpu_run["history"]
    print(cpu_run["command"])
    glue_md("cpu_minutes", f"{seconds['total'] / 60:.1f}")
    glue_md("cpu_train_minutes", f"{seconds['train'] / 60:.1f}")
    glue_md("cpu_prepare_seconds", f"{seconds['prepare_data']:.0f}")
    hardware = cpu_run["hardware"]
    glue_md("cpu_hardware", f"{hardware['cpu']}, {hardware['logical_cpus']} logical CPUs, "
            f"{hardware['torch_threads']} torch thread")
    glue_md("cpu_hardware_zh", f"{hardware['cpu']}（{hardware['logical_cpus']} 个逻辑 CPU，"
            f"{hardware['torch_threads']} 个 torch 线程）")
    loads = cpu_run["load_average"]["start"][0], cpu_run["load_average"]["end"][0]
    glue_md("cpu_load", f"{loads[0]:.1f} when it started and {loads[1]:.1f} when it finished")
    glue_md("cpu_load_zh", f"开始时为 {loads[0]:.1f}，结束时为 {loads[1]:.1f}")
    glue_md("cpu_torch", cpu_run["software"]["torch"])
    glue_count("cpu_parameters", cpu_run['parameters'])
    glue_count("cpu_documents", cpu_run['data']['documents'])
    glue_count("cpu_training_tokens", cpu_run['data']['training_tokens'])
    glue_count("cpu_tokens_seen", history[-1]['tokens_seen'])
    glue_md("cpu_fraction_seen",
            f"{100 * history[-1]['tokens_seen'] / cpu_run['data']['training_tokens']:.0f}%")
    glue_md("cpu_val_loss", f"{cpu_run['validation_loss']:.2f}")
    glue_count("cpu_steps", cpu_run['train_config']['steps'])
    glue_md("cpu_log_vocab", f"{math.log(cpu_run['model_config']['vocab_size']):.2f}")
    val_losses = [record["val_loss"] for record in history]
    # The prose says the validation loss was still falling at the end of the run.
    assert val_losses[-1] == min(val_losses) and val_losses[-1] < val_losses[-2]
    glue_count("cpu_tokens_per_second", round(history[-1]['tokens_seen'] / seconds['train']))
    model_config = cpu_run["model_config"]
    glue_md("cpu_model", f"{model_config['num_layers']} blocks of width "
            f"{model_config['d_model']} with {model_config['num_heads']} heads, windows of "
            f"{model_config['context_length']} tokens, a vocabulary of "
            f"{model_config['vocab_size']:,}")
    glue_md("cpu_model_zh", f"{model_config['num_layers']} 个块，宽度 {model_config['d_model']}，"
            f"{model_config['num_heads']} 个头，窗口长 {model_config['context_length']} 个词元，"
            f"词表大小 {model_config['vocab_size']}")
    return cpu_run


def plot_training_curve(cpu_run: dict) -> None:
    """Loss per step, its 50-step mean and the validation loss against tokens read, and ln V.

    Described in the appendix "Experiments behind chapter 12", section "The full CPU run"."""
    history = cpu_run["history"]
    vocab_size = cpu_run["model_config"]["vocab_size"]
    losses = np.concatenate([np.array(r["step_losses"]) for r in history])
    tokens_per_step = history[0]["tokens_seen"] / history[0]["step"]
    seen = np.arange(1, len(losses) + 1) * tokens_per_step / 1e6
    window = 50
    smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
    _, ax = plt.subplots(figsize=(6.7, 3.6))
    ax.plot(seen, losses, color="#bbbbbb", linewidth=0.5, label="training loss, per step")
    ax.plot(seen[window - 1 :], smooth, color="#4c72b0", label=f"mean of {window} steps")
    ax.plot([r["tokens_seen"] / 1e6 for r in history], [r["val_loss"] for r in history],
            "o-", color="#dd8452", label="validation loss")
    ax.axhline(math.log(vocab_size), color="black", linestyle=":", linewidth=0.8,
               label="ln V (a uniform guess)")
    ax.set_xlabel("training tokens read (millions)")
    ax.set_ylabel("loss (nats per token)")
    ax.set_ylim(top=math.log(vocab_size) + 0.3)
    ax.legend(fontsize=10, loc="center right")  # clear of the curves and of ln V
    ax.set_title("the full CPU run", fontsize="medium")


def _checked_orders(results: Path) -> tuple[dict, dict]:
    """The full run's held-out scores (`gpt_cpu.json`) and the n-gram orders' record, with what
    the chapter and the appendix say of them checked: the record rebuilt the run's bigram, the
    three GPTs beat the bigram and lose to the 3- and 4-gram, every paired interval on one side
    of zero."""
    scores = GPT_CPU.read(results)["heldout"]["bits_per_byte"]
    ngram_record = GPT_NGRAMS.read(results)
    full_ngrams = ngram_record["runs"]["gpt_cpu"]["models"]
    assert abs(full_ngrams["Kneser-Ney 2-gram"]["bits_per_byte"]
               - scores["Kneser-Ney bigram"]) < 1e-9, "the record rebuilt the run's bigram"
    gpt_minus = [ngram_record["runs"][r]["models"]["GPT"]["minus"] for r in NGRAM_RUNS]
    assert all(m["Kneser-Ney 2-gram"]["interval_95"][1] < 0 for m in gpt_minus)
    assert all(m[n]["interval_95"][0] > 0 for m in gpt_minus
               for n in ("Kneser-Ney 3-gram", "Kneser-Ney 4-gram"))
    return scores, ngram_record


def bits_per_byte_table(results: Path, short_scores: dict[str, float],
                        short_context: int) -> Markdown:
    """Bits per byte of a short run's GPT and counting models (`short_scores`, from
    `heldout_scores` on the page's own held-out reviews; its windows `short_context` tokens
    long) beside the full run's and Kneser-Ney of orders 2 to 4 on the recorded held-out test
    reviews; the numbers the chapter quotes about the full run glued.

    Described in chapter 12, section "The GPT on the same text"."""
    cpu_run = GPT_CPU.read(results)
    heldout = cpu_run["heldout"]
    scores, ngram_record = _checked_orders(results)
    orders = ngram_record["runs"]["gpt_cpu"]["models"]
    best_order = min(ORDERS, key=lambda name: orders[name]["bits_per_byte"])
    gpt = scores["GPT"]
    bigram = orders["Kneser-Ney 2-gram"]["bits_per_byte"]
    best = orders[best_order]["bits_per_byte"]
    # The prose: the GPT beats the bigram and the unigram, and loses to the longer orders.
    assert scores["unigram (add-1)"] > bigram > gpt > orders["Kneser-Ney 3-gram"]["bits_per_byte"]
    glue_md("heldout_reviews", f"{heldout['reviews']:,}")
    glue_md("gpt_bpb", f"{gpt:.3f}")
    glue_md("bigram_bpb", f"{bigram:.3f}")
    glue_md("best_order_bpb", f"{best:.3f}")
    glue_md("best_order_name", best_order)
    glue_md("best_order_name_zh", f"Kneser-Ney {ORDER_ZH[best_order.split()[-1][0]]}元语法模型")
    glue_md("gpt_margin_bits", f"{bigram - gpt:.3f}")
    glue_md("gpt_behind_best", f"{gpt - best:.2f}")
    glue_md("heldout_bytes_per_token", f"{heldout['bytes'] / heldout['tokens']:.2f}")
    glue_count("heldout_token_count", heldout['tokens'])
    glue_count("heldout_byte_count", heldout['bytes'])
    context = cpu_run["model_config"]["context_length"]
    add_k = next(name for name in short_scores if name.startswith("add-k"))
    recorded_add_k = next(name for name in scores if name.startswith("add-k"))
    rows = [["unigram", "none", short_scores["unigram (add-1)"],
             scores["unigram (add-1)"]],
            ["add-k bigram", "1 token", short_scores[add_k], scores[recorded_add_k]],
            ["Kneser-Ney bigram", "1 token", short_scores["Kneser-Ney bigram"], bigram],
            ["Kneser-Ney 3-gram", "2 tokens", None, orders["Kneser-Ney 3-gram"]["bits_per_byte"]],
            ["Kneser-Ney 4-gram", "3 tokens", None, orders["Kneser-Ney 4-gram"]["bits_per_byte"]],
            ["GPT", f"{short_context} / {context} tokens", short_scores["GPT"], gpt]]
    return escaped_table(["model", "predicts from", "short run", "full run"],
                         [[*row[:2], *("" if v is None else f"{v:.3f}" for v in row[2:])]
                          for row in rows])


def heldout_table(results: Path) -> Markdown:
    """The full run's held-out bits per byte beside the counting models', numbers glued.

    Described in the appendix "Experiments behind chapter 12", section "Held-out scores
    against counting models"."""
    cpu_run = GPT_CPU.read(results)
    heldout = cpu_run["heldout"]
    scores = heldout["bits_per_byte"]
    ngram_names = [name for name in scores if "GPT" not in name]  # counted from all the text
    best_ngram = min(ngram_names, key=scores.__getitem__)
    bytes_per_token = heldout["bytes"] / heldout["tokens"]
    rows = [[name, f"{value:.3f}", f"{value * math.log(2) * bytes_per_token:.2f}",
             f"{scores[best_ngram] / value:.3f}"] for name, value in scores.items()]
    glue_md("gpt_bpb", f"{scores['GPT']:.3f}")
    glue_md("best_ngram_name", best_ngram)
    glue_md("best_ngram_bpb", f"{scores[best_ngram]:.3f}")
    glue_md("gpt_margin_bits", f"{scores[best_ngram] - scores['GPT']:.3f}")
    glue_md("gpt_margin_percent", f"{100 * (1 - scores['GPT'] / scores[best_ngram]):.1f}%")
    glue_md("heldout_reviews", f"{heldout['reviews']:,}")
    glue_count("heldout_bytes", heldout['bytes'])
    glue_count("counted_tokens", heldout['counted_tokens'])
    glue_md("kn_discount", f"{heldout['kneser_ney_discount']:.3f}")
    glue_md("add_k", f"{heldout['add_k']:g}")
    glue_md("unigram_bpb", f"{scores[ngram_names[0]]:.3f}")
    same_data = "Kneser-Ney bigram, from the GPT's windows"
    glue_md("same_data_bpb", f"{scores[same_data]:.3f}")
    glue_count("read_tokens", heldout['read_tokens'])
    glue_md("gpt_unigram_gain", f"{scores[ngram_names[0]] - scores['GPT']:.2f}")
    # The prose describes this outcome: the GPT beats every model of this table (none
    # looks further back than one token), the bigram counted from its own windows included.
    assert scores[ngram_names[0]] > scores[same_data] > scores[best_ngram] > scores["GPT"]
    return escaped_table(["model", "bits per byte", "nats per token",
                          f"{best_ngram} ÷ model"], rows)


def shorter_run_table(results: Path) -> Markdown:
    """The 3,000-step run (`gpt_cpu_3000_steps.json`) beside the full run: steps, tokens read,
    validation loss, and held-out bits per byte of the GPT and of the Kneser-Ney bigram counted
    from its own windows; its command printed, numbers glued.

    Described in the appendix "Experiments behind chapter 12", section "The 3,000-step run"."""
    shorter, full = GPT_CPU_3000_STEPS.read(results), GPT_CPU.read(results)
    print(shorter["command"])
    same_data = "Kneser-Ney bigram, from the GPT's windows"
    for run in (shorter, full):  # the same recipe and data, only the length differs
        assert run["model_config"] == full["model_config"]
        assert run["data"]["train_fingerprint"] == full["data"]["train_fingerprint"]
    shorter_bpb = shorter["heldout"]["bits_per_byte"]
    assert shorter_bpb["GPT"] > shorter_bpb[same_data], "the prose: it lost to its windows"
    glue_count("shorter_steps", shorter['train_config']['steps'])
    glue_md("shorter_gpt_bpb", f"{shorter_bpb['GPT']:.3f}")
    glue_md("shorter_same_data_bpb", f"{shorter_bpb[same_data]:.3f}")
    glue_count("shorter_read_tokens", shorter['heldout']['read_tokens'])
    glue_md("shorter_minutes", f"{shorter['seconds']['total'] / 60:.0f}")
    glue_md("shorter_load", f"{shorter['load_average']['start'][0]:.1f}")
    glue_md("shorter_val_loss", f"{shorter['validation_loss']:.2f}")
    # Where the full run stood when it had read about as much.
    near = min(full["history"], key=lambda r: abs(r["tokens_seen"]
                                                   - shorter["history"][-1]["tokens_seen"]))
    glue_count("full_near_step", near['step'])
    glue_md("full_near_val_loss", f"{near['val_loss']:.2f}")
    rows = [[f"{run['train_config']['steps']:,}", f"{run['heldout']['read_tokens']:,}",
             f"{run['validation_loss']:.2f}", f"{run['heldout']['bits_per_byte']['GPT']:.3f}",
             f"{run['heldout']['bits_per_byte'][same_data]:.3f}"] for run in (shorter, full)]
    return escaped_table(["steps", "tokens read", "validation loss (nats per token)",
                          "GPT, bits per byte", "Kneser-Ney bigram from its windows"], rows)


def ngram_orders_table(results: Path) -> Markdown:
    """Bits per byte of Kneser-Ney orders 2 to 4 and the full run's GPT, with 95% intervals.

    Described in the appendix "Experiments behind chapter 12", section "Held-out scores
    against counting models"."""
    scores, ngram_record = _checked_orders(results)
    full_ngrams = ngram_record["runs"]["gpt_cpu"]["models"]
    print(ngram_record["command"])
    best_order = min(ORDERS, key=lambda n: full_ngrams[n]["bits_per_byte"])
    glue_count("ngram_resamples", ngram_record['resamples'])
    glue_md("gpt_bpb_interval", "{:.3f} to {:.3f}".format(*full_ngrams["GPT"]["interval_95"]))
    glue_md("gpt_bpb_interval_zh", "{:.3f} 到 {:.3f}".format(*full_ngrams["GPT"]["interval_95"]))
    glue_md("ngram_seconds", f"{max(r['seconds'] for r in ngram_record['runs'].values()):.0f}")
    glue_md("best_order_name", best_order)
    glue_md("best_order_name_zh", f"Kneser-Ney {ORDER_ZH[best_order.split()[-1][0]]}元语法模型")
    best_order_bpb = full_ngrams[best_order]["bits_per_byte"]
    glue_md("best_order_bpb", f"{best_order_bpb:.3f}")
    glue_md("trigram_bpb", f"{full_ngrams['Kneser-Ney 3-gram']['bits_per_byte']:.3f}")
    glue_md("gpt_behind_best", f"{scores['GPT'] - best_order_bpb:.2f}")
    glue_md("gpt_behind_percent", f"{100 * (scores['GPT'] / best_order_bpb - 1):.0f}%")
    rows = [[name.replace("GPT", "GPT, the full run"), f"{row['bits_per_byte']:.3f}",
             "{:.3f} to {:.3f}".format(*row["interval_95"]) if "interval_95" in row else ""]
            for name, row in full_ngrams.items()]
    return escaped_table(["model", "bits per byte", "95% interval"], rows)


def paired_ngram_table(results: Path) -> Markdown:
    """Each run's GPT minus each n-gram, bits per byte, with the paired difference's interval.

    Described in the appendix "Experiments behind chapter 12", section "Held-out scores
    against counting models"."""
    _, ngram_record = _checked_orders(results)
    paired_rows = []
    for name in NGRAM_RUNS:
        gpt = ngram_record["runs"][name]["models"]["GPT"]
        paired_rows.append([name, f"{gpt['bits_per_byte']:.3f}", *(
            "{:+.3f} ({:+.3f} to {:+.3f})".format(row["bits_per_byte"], *row["interval_95"])
            for row in gpt["minus"].values())])
    return escaped_table(["run", "GPT", *(f"minus {n.removeprefix('Kneser-Ney ')}"
                                          for n in gpt["minus"])], paired_rows)


def recorded_sampling(results: Path) -> dict[str, dict]:
    """The full run's recorded answers, one per decoding rule (`gpt_cpu_sampling/`).

    Described in chapter 12, section "From logits to a token"."""
    return {rule: record.read(results) for rule, record in GPT_SAMPLING.items()}


def first_step_table(results: Path, prompt_text: str) -> Markdown:
    """The full run's six likeliest first tokens after `prompt_text`, under each rule.

    Described in chapter 12, section "From logits to a token"."""
    sampling = recorded_sampling(results)
    first_steps = {name: {row["id"]: row for row in sampling[name]["first_step"]}
                   for name in SAMPLING_RULES}
    ids_shown = [row["id"] for row in sampling["greedy"]["first_step"]][:6]
    greedy_rows = first_steps["greedy"]
    rows = [[Code(greedy_rows[i]["token"]), f"{greedy_rows[i]['probability']:.3f}",
             *(f"{first_steps[rule][i]['after_decoding_rule']:.3f}"
               for rule in SAMPLING_RULES)]
            for i in ids_shown]
    for name in SAMPLING_RULES:
        glue(f"kept_{name}", sampling[name]["kept_tokens"], display=False)
    recorded_prompt = sampling["greedy"]["prompt"]
    assert recorded_prompt == prompt_text, "the recorded samples continue this page's prompt"
    # The prose reads the temperature column: every row shown gains.
    assert all(first_steps["temperature"][i]["after_decoding_rule"]
               > greedy_rows[i]["probability"] for i in ids_shown)
    return escaped_table(["next token", "softmax", *RULE_NAMES], rows)


def recorded_samples_table(results: Path, limit: int | None = 250) -> Markdown:
    """The first `limit` characters (all of them with None) of the full run's first sample
    under each rule.

    Described in chapter 12, section "From logits to a token", and in the appendix
    "Experiments behind chapter 12", section "The recorded samples"."""
    sampling = recorded_sampling(results)

    def shorter(text: str) -> str:
        return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."

    shown_as = dict(zip(SAMPLING_RULES, RULE_NAMES))
    return escaped_table(["rule", "sample (full run)"],
                         [[shown_as[name], shorter(sampling[name]["samples"][0]["text"])]
                          for name in SAMPLING_RULES])


def sampling_setup(results: Path) -> None:
    """Print the command of each recorded decoding rule and glue what they share: the number
    of samples, new tokens and the seed.

    Described in the appendix "Experiments behind chapter 12", section "The recorded
    samples"."""
    sampling = recorded_sampling(results)
    cpu_run = GPT_CPU.read(results)
    for rule in SAMPLING_RULES:
        print(sampling[rule]["command"])
    shared = {(len(r["samples"]), r["max_new_tokens"], r["seed"], r["checkpoint_sha256"])
              for r in sampling.values()}
    assert len(shared) == 1, "every rule wrote as many samples, as long, with one seed"
    count, new_tokens, seed, _ = shared.pop()
    # The prose: greedy's samples are one text (the same context, the same continuation).
    assert len({sample["text"] for sample in sampling["greedy"]["samples"]}) == 1
    assert all(r["command"].startswith("scratchformer generate --checkpoint runs/gpt_cpu ")
               for r in sampling.values()) and cpu_run["command"].endswith("--set steps=13000")
    glue_md("sampling_count", f"{count}")
    glue_md("sampling_new_tokens", f"{new_tokens}")
    glue_md("sampling_seed", f"{seed}")


def kv_cache_timing(results: Path) -> Markdown:
    """The recorded timings of generation with and without the cache, numbers glued.

    Described in chapter 12, section "Attention that reads from a cache"."""
    kv = GPT_KV_CACHE.read(results)
    print(kv["command"])
    print(kv["header"] + busy_note(kv))
    kv_rows = {row["new_tokens"]: row for row in kv["rows"]}
    shortest, longest = min(kv_rows), max(kv_rows)
    for name, n in (("short", shortest), ("long", longest)):
        glue(f"kv_{name}_tokens", n, display=False)
        glue_md(f"kv_{name}_ratio", f"{kv_rows[n]['ratio']:.1f}")
        glue_md(f"kv_{name}_cached", f"{kv_rows[n]['cached_tokens_per_second']:,.0f}")
        glue_md(f"kv_{name}_uncached", f"{kv_rows[n]['uncached_tokens_per_second']:,.0f}")
    growth = longest / shortest
    glue_md("kv_length_growth", f"{growth:.0f}")
    glue_md("kv_length_growth_squared", f"{growth ** 2:.0f}")
    growth_of = {}
    for kind in ("uncached", "cached"):
        seconds_at = {n: row[f"{kind}_seconds"] for n, row in kv_rows.items()}
        growth_of[kind] = seconds_at[longest] / seconds_at[shortest]
        glue_md(f"kv_{kind}_time_growth", f"{growth_of[kind]:.0f}")
    # What the prose says of the growths, checked: the cached loop about as the length, the
    # uncached one far faster, short of the square.
    assert growth_of["cached"] < 1.5 * growth and growth < growth_of["uncached"] < growth ** 2
    return Markdown(kv["table"])


def requested_reviews(results: Path) -> dict[tuple[str, ...], dict]:
    """The reviews written on request, keyed by (model, sentiment) (`gpt_cpu_reviews/`).

    Described in chapter 12, section "Reviews on demand"."""
    return {key: record.read(results) for key, record in GPT_REVIEWS.items()}


def reviews_on_demand(results: Path) -> Markdown:
    """Per model, how often chapter 11's classifier agrees with the requested sentiment, how
    many pairs are identical, and the paired effect of the request; numbers glued (the hint
    in the Chinese edition's words too).

    Both models' reviews are read from `gpt_cpu_reviews/` (their commands are in each file),
    the fine-tuning run from `gpt_cpu_sentiment.json`; the page quotes the fine-tuning's
    length, what share of the documents carry a label, and what a review costs the model.
    The judge is checked to be chapter 11's recorded classifier, the checkpoint whose
    predictions `imdb_cpu_predictions.json` records.

    Described in chapter 12, section "Reviews on demand", and in the appendix "Experiments
    behind chapter 12", section "Reviews on demand and their judge"."""
    reviews = requested_reviews(results)
    judge = IMDB_CPU_PREDICTIONS.read(results)["checkpoint_sha256"]
    assert all(r["judge_sha256"] == judge for r in reviews.values()), "chapter 11's classifier"
    rows, effects = [], []
    for model_name, description in REVIEW_MODELS.items():
        samples = {s: reviews[model_name, s]["samples"] for s in ("negative", "positive")}
        both = [reviews[model_name, s]["agreement"] for s in ("negative", "positive")]
        agreement = f"{100 * sum(both) / 2:.1f}%"
        identical = sum(a["text"] == b["text"]
                        for a, b in zip(samples["negative"], samples["positive"]))
        asked = {s: [int(x["judge"]["label"] == "positive") for x in samples[s]]
                 for s in samples}
        effect = paired_difference(asked["positive"], asked["negative"])  # pair by pair
        effects.append(effect)
        base_rate = np.mean(asked["negative"] + asked["positive"])
        rows.append([description, agreement, f"{identical} of {len(samples['positive'])}",
                     f"{100 * base_rate:.1f}%",
                     f"{100 * effect['mean']:+.1f} [{100 * effect['low']:+.1f}, "
                     f"{100 * effect['high']:+.1f}]"])
        glue_md(f"agreement_{model_name}", agreement)
        glue(f"identical_{model_name}", identical, display=False)
        glue_md(f"judged_effect_{model_name}", f"{100 * effect['mean']:+.1f}")
        glue_md(f"judged_interval_{model_name}",
                f"{100 * effect['low']:+.1f} to {100 * effect['high']:+.1f}")
        glue_md(f"judged_interval_{model_name}_zh",
                f"{100 * effect['low']:+.1f} 到 {100 * effect['high']:+.1f}")
        glue_md(f"judged_base_rate_{model_name}", f"{100 * base_rate:.1f}%")
        # The prose reads these results as chance: the models do not follow the token.
        assert all(abs(a - 0.5) < 0.15 for a in both)
    pairs = len(samples["positive"])
    glue_md("reviews_per_request", f"{pairs:,}")
    glue_md("review_seed", f"{reviews['pretrained', 'positive']['seed']}")
    glue_md("review_top_p", f"{reviews['pretrained', 'positive']['top_p']}")
    # The prose reads: each judged effect's interval holds zero.
    assert all(e["low"] <= 0 <= e["high"] for e in effects)
    largest = max(effects, key=lambda e: e["mean"] / e["standard_error"])
    hint = largest["mean"] / largest["standard_error"] > 1.5
    glue_md("judged_hint", f"The larger, {100 * largest['mean']:+.1f} points, is a hint "
            f"that {pairs} pairs cannot confirm." if hint else "")
    glue_md("judged_hint_zh", f"较大的 {100 * largest['mean']:+.1f} 个百分点是一个迹象，"
            f"但 {pairs} 对影评还不足以证实它。" if hint else "")
    tuned_run = GPT_CPU_SENTIMENT.read(results)
    cpu_run = GPT_CPU.read(results)
    glue_md("tuned_minutes", f"{tuned_run['seconds']['total'] / 60:.1f}")
    glue_md("tuned_steps", f"{tuned_run['train_config']['steps']:,}")
    run_data = cpu_run["data"]
    glue_md("labelled_share",
            f"{100 * run_data['labelled_documents'] / run_data['documents']:.0f}%")
    heldout = cpu_run["heldout"]
    review_tokens = heldout["tokens"] / heldout["reviews"]
    nats_per_review = cpu_run["validation_loss"] * review_tokens
    glue_md("review_tokens", f"{review_tokens:.0f}")
    glue_count("bits_per_review", round(nats_per_review / math.log(2)))
    judge_accuracy = IMDB_CPU.read(results)["test"]["accuracy"]
    glue_md("judge_accuracy", f"{100 * judge_accuracy:.0f}%")
    return escaped_table(["model", "classifier agrees with the request", "identical pairs",
                          "judged positive", "asked positive minus asked negative, points "
                          "[95% interval]"], rows)


def sentiment_token_test(results: Path, root: Path) -> None:
    """The likelihood of test reviews after their true and their flipped sentiment token, read
    from `gpt_cpu_sentiment_token.json`: its command and result printed, numbers glued (the
    interval in the Chinese edition's words too).

    Described in the appendix "Experiments behind chapter 12", section "The sentiment-token
    likelihood test"; chapter 12 quotes its ratio per review."""
    token_record = GPT_CPU_SENTIMENT_TOKEN.read(results)
    print(token_record["command"])
    served_manifest = root / "_static" / "models" / "gpt" / "manifest.json"
    if served_manifest.is_file():  # the model scored is the one the page's box serves
        served_checkpoint = json.loads(served_manifest.read_text())["checkpoint"]
        assert served_checkpoint["sha256"] == token_record["checkpoint_sha256"]
    gaps = token_record["flipped_minus_true_nats_per_token"]
    gap = paired_difference(gaps)  # each review's flipped minus true, already a difference
    per_review = np.multiply(gaps, token_record["text_tokens"])  # nats over each review
    print(f"{len(gaps)} test reviews: flipped minus true, nats per token: "
          f"{interval_text(gap, digits=5, unit='')}; likelier after the true token: "
          f"{np.mean(np.array(gaps) > 0):.1%}; {per_review.mean():.3f} nats per review")
    glue_md("token_reviews", f"{len(gaps):,}")
    glue_md("token_minutes", f"{token_record['seconds'] / 60:.1f}")
    glue_md("token_gap", f"{gap['mean']:+.5f}")
    glue_md("token_gap_interval", f"{gap['low']:+.5f} to {gap['high']:+.5f}")
    glue_md("token_gap_interval_zh", f"{gap['low']:+.5f} 到 {gap['high']:+.5f}")
    glue_md("token_gap_review", f"{per_review.mean():.2f}")
    glue_md("token_ratio_review", f"{math.exp(per_review.mean()):.2f}")
    glue_md("token_share_true", f"{np.mean(np.array(gaps) > 0):.0%}")
    # The prose reads: the likelihood test finds a gap whose interval is above zero, far below
    # a nat per review.
    assert gap["low"] > 0 and per_review.mean() < 1


def token_ratio_review(results: Path) -> None:
    """Glue `token_ratio_review`: how many times likelier a test review is, on average over its
    text, after its true sentiment token than after the flipped one.

    Described in chapter 12, section "Reviews on demand"."""
    token_record = GPT_CPU_SENTIMENT_TOKEN.read(results)
    per_review = np.multiply(token_record["flipped_minus_true_nats_per_token"],
                             token_record["text_tokens"])
    glue_md("token_ratio_review", f"{math.exp(per_review.mean()):.2f}")
    glue_md("token_reviews", f"{len(per_review):,}")


def web_model_note(results: Path, root: Path) -> None:
    """Glue what the page says of the model its box serves, checked against the record.

    Described in chapter 12, section "Try it"."""
    cpu_run = GPT_CPU.read(results)
    served_path = root / "_static" / "models" / "gpt" / "manifest.json"
    if served_path.is_file():
        served = json.loads(served_path.read_text())
        assert served["command"] == cpu_run["command"]
        recorded_bpb = cpu_run["heldout"]["bits_per_byte"]["GPT"]
        glue_md("web_gpt_same",
                f"it scores {served['bits_per_byte']:.3f} bits per byte on the held-out "
                "reviews, " + ("the record's score exactly"
                               if served["bits_per_byte"] == recorded_bpb
                               else f"against the record's {recorded_bpb:.3f}"))
    else:
        glue_md("web_gpt_same", "this build has no exported model, so the box below says how "
                "to export one")
