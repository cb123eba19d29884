"""Chapter 11's recorded results: the full CPU run, its predictions, the baselines, the ablations,
the ensemble and the calibration, each read from `book/results/`, checked against what the
chapter's prose says of it, and laid out as the table or figure the chapter shows.

Each function reads one record (or takes one already read), glues the numbers the prose quotes
(`glue_md`), and raises `ValueError` naming the claim when a record no longer supports it.

Written by hand, not exported: the chapter's argument needs these tables and figures, not the
code that reads a record and lays it out. What this module deliberately does not handle: making
the records (`tools/records/` and `benchmarks/baselines.py` do that), records of other chapters,
and pages built outside the repository.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from statistics import mean, stdev

import matplotlib.pyplot as plt
import numpy as np
import torch
from IPython.display import Markdown

from scratchformer.data.framing import CLS_ID, PAD_ID, SEP_ID, encode_review, review_encoding
from scratchformer.measure.statistics import interval_text, paired_difference
from scratchbook.pages import glue_count, glue_md, in_chinese, markdown_table
from scratchbook.records import IMDB_TAUGHT_BLOCKS, WEB_CLASSIFIER_PRECISION
from scratchbook.records.taught import TAUGHT_MODEL
from scratchformer.runs.hardware import busy_note, recorded_load

PAPER_NBSVM_ACCURACY = 0.912  # Wang and Manning (2012), table 3: NBSVM-bi on IMDB


def holds(condition: bool, claim: str) -> None:
    """Raise `ValueError` when a record no longer supports what the prose says of it.

    Described in chapter 11 (every claim its prose makes of a record is checked here)."""
    if not condition:
        raise ValueError(f"the record no longer supports the prose: {claim}")


def review_lengths_figure(lengths: np.ndarray, data_kind: str) -> None:
    """A histogram of the reviews' lengths in tokens, with the 254 that fit marked.

    Described in chapter 11, section "Tokens"."""
    fig, ax = plt.subplots(figsize=(7, 2.3))
    ax.hist(np.minimum(lengths, 1200), bins=60, color="#4c72b0")
    ax.axvline(254, color="crimson",
               label="254 tokens: what fits between [CLS] and [SEP] at max_len 256")
    ax.set_xlabel("GPT-2 tokens per review (longer ones counted at 1,200)")
    ax.set_ylabel("reviews")
    ax.set_title(f"Review lengths, training split ({data_kind.split(';')[0]})", fontsize=10)
    ax.legend(fontsize=10)
    plt.show()


LABELS_ZH = {"negative": "负面", "positive": "正面"}  # a verdict, as the Chinese edition says it


def hardware_zh(hardware: dict) -> str:
    """A record's machine in the Chinese edition's words: its processor, logical CPUs and
    torch threads."""
    return (f"{hardware['cpu']}，{hardware['logical_cpus']} 个逻辑 CPU，"
            f"{hardware['torch_threads']} 个 torch 线程")


def cpu_run_table(cpu_run: dict) -> Markdown:
    """The full CPU run's per-class test metrics; glues what the prose quotes of the run.

    Described in chapter 11, section "The full CPU run"."""
    test_metrics = cpu_run["test"]
    seconds = cpu_run["seconds"]
    glue_md("cpu_accuracy", f"{100 * test_metrics['accuracy']:.1f}%")
    glue_md("cpu_minutes", f"{seconds['total'] / 60:.1f}")
    glue_md("cpu_train_minutes", f"{seconds['train'] / 60:.1f}")
    glue_md("cpu_hardware", f"{cpu_run['hardware']['cpu']}, "
            f"{cpu_run['hardware']['logical_cpus']} logical CPUs, "
            f"{cpu_run['hardware']['torch_threads']} torch thread(s)",
            hardware_zh(cpu_run["hardware"]))
    cpu_load = recorded_load(cpu_run)
    glue_md("cpu_load", f"{cpu_load['start']:.1f} when it started and "
            f"{cpu_load['end']:.1f} when it finished",
            f"开始时为 {cpu_load['start']:.1f}，结束时为 {cpu_load['end']:.1f}")
    glue_md("cpu_machine",
            "was busy with other work" if cpu_load["busy"] else "was otherwise quiet",
            "同时还忙着别的工作" if cpu_load["busy"] else "没有别的工作")
    glue_md("cpu_torch", cpu_run["software"]["torch"])
    glue_md("cpu_val_accuracy", f"{100 * cpu_run['validation']['accuracy']:.1f}%")
    best_record = max(cpu_run["history"], key=lambda record: record["val_accuracy"])
    glue_md("cpu_best_point", f"{best_record['reviews_seen']:,} training reviews (epoch "
            f"{best_record['epoch']} of {cpu_run['train_config']['epochs']})",
            f"{best_record['reviews_seen']} 条训练影评（第 {best_record['epoch']} 轮，共 "
            f"{cpu_run['train_config']['epochs']} 轮）")
    lower = test_metrics["accuracy"] < cpu_run["validation"]["accuracy"]
    glue_md("val_vs_test", "lower" if lower else "not lower", "更低" if lower else "并不更低")
    recalls = {name: m["recall"] for name, m in test_metrics["per_class"].items()}
    glue_md("negative_recall", f"{100 * recalls['negative']:.1f}%")
    glue_md("positive_recall", f"{100 * recalls['positive']:.1f}%")
    glue_md("over_budget",
            f"{100 * cpu_run['data']['train_tokens']['fraction_over_budget']:.0f}%")
    glue_md("median_tokens", f"{cpu_run['data']['train_tokens']['median']:.0f}")
    glue_md("tokens_per_second", f"{cpu_run['throughput']['train_tokens_per_second']:,.0f}",
            f"{cpu_run['throughput']['train_tokens_per_second']:.0f}")
    rows = [[name, f"{m['precision']:.3f}", f"{m['recall']:.3f}", f"{m['f1']:.3f}",
             f"{m['support']:,}"]
            for name, m in test_metrics["per_class"].items()]
    return markdown_table(["class", "precision", "recall", "F1", "reviews"], rows)


def training_curves(cpu_run: dict) -> None:
    """The loss of every batch, and the losses and accuracies at each validation, against
    the training reviews seen; glues the losses the prose compares.

    Described in chapter 11, section "The full CPU run"."""
    history = cpu_run["history"]
    batch_size = cpu_run["train_config"]["batch_size"]
    # thousands of training reviews
    seen = np.array([r["reviews_seen"] for r in history]) / 1000
    losses = np.concatenate([np.array(r["step_losses"]) for r in history])
    batch_seen = np.arange(1, len(losses) + 1) * batch_size / 1000
    window = min(25, len(losses))
    smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
    epoch_ends = [r["reviews_seen"] / 1000 for r, after in zip(history, history[1:])
                  if r["epoch"] != after["epoch"]]
    # The loss of every batch across the top; the validations' loss and accuracy below.
    fig = plt.figure(figsize=(8, 4.6))
    grid = fig.add_gridspec(2, 2)
    axes = [fig.add_subplot(grid[0, :]), fig.add_subplot(grid[1, 0]),
            fig.add_subplot(grid[1, 1])]
    axes[0].plot(batch_seen, losses, color="#bbbbbb", linewidth=0.6, label="batch")
    axes[0].plot(batch_seen[window - 1 :], smooth, color="#4c72b0",
                 label=f"mean of {window}")
    axes[0].set(ylabel="training loss", title="loss per batch")
    for ax, key, title in ((axes[1], "loss", "loss"), (axes[2], "accuracy", "accuracy")):
        ax.plot(seen, [r[f"train_{key}"] for r in history], "o-",
                label="train (since last point)")
        ax.plot(seen, [r[f"val_{key}"] for r in history], "o-", label="validation")
        ax.set(ylabel=key, title=f"{title} at each validation")
    axes[2].axhline(cpu_run["test"]["accuracy"], color="crimson", linestyle="--",
                    label="test (best model)")
    for ax in axes:
        ax.set_xlabel("training reviews seen (thousands)")
        for end in epoch_ends:
            ax.axvline(end, color="black", linestyle=":", linewidth=0.8)
        ax.legend(fontsize=10)
    plt.tight_layout()
    plt.show()
    first_epoch_end = [r for r in history if r["epoch"] == 1][-1]
    last = history[-1]
    for name, record in (("epoch1", first_epoch_end), ("last", last)):
        glue_md(f"{name}_train_loss", f"{record['train_loss']:.2f}")
        glue_md(f"{name}_val_loss", f"{record['val_loss']:.2f}")
    holds(abs(first_epoch_end["train_loss"] - first_epoch_end["val_loss"]) < 0.05,
          "the two losses are close at the end of epoch 1")
    holds(last["train_loss"] < last["val_loss"] - 0.1,
          "the training loss falls away from the validation loss in the second epoch")


def predictions_table(recorded: dict) -> Markdown:
    """The full run's verdicts on the recorded reviews; glues the two the prose discusses.

    Described in chapter 11, section "Saving, loading and classifying new text"."""
    prediction_rows = []
    for item in recorded["predictions"]:
        text = item["text"] if len(item["text"]) <= 60 else item["text"][:57] + "..."
        probability = item["probabilities"][item["label"]]
        prediction_rows.append([text.replace("|", "/"), item["label"], f"{probability:.3f}"])
    not_bad = recorded_item(recorded, "Not bad at all.")
    glue_md("not_bad_label", not_bad["label"], LABELS_ZH[not_bad["label"]])
    glue_md("not_bad_p", f"{not_bad['probabilities'][not_bad['label']]:.2f}")
    holds(not_bad["label"] == "negative", "the prose explains a negative verdict")
    boredom = recorded_item(recorded, "A masterpiece of boredom.")["label"]
    glue_md("boredom_label", boredom, LABELS_ZH[boredom])
    return markdown_table(["review", "label", "probability of that label"], prediction_rows)


def recorded_item(recorded: dict, text: str) -> dict:
    """The recorded prediction for `text`.

    Described in chapter 11, section "Saving, loading and classifying new text"."""
    found = [item for item in recorded["predictions"] if item["text"] == text]
    if not found:
        raise ValueError(f"the record holds no prediction for {text!r}")
    return found[0]


def show_token(token_id: int) -> str:
    """A token as the page shows it: the special tokens by name, the others decoded.

    Described in chapter 11, section "Why it errs, token by token"."""
    names = {PAD_ID: "[PAD]", CLS_ID: "[CLS]", SEP_ID: "[SEP]"}
    return names.get(token_id) or review_encoding().decode([token_id]).replace("`", "'")


def contribution_text(contributions: Callable, model: torch.nn.Module, text: str,
                      max_len: int = 64) -> Markdown:
    """`text`'s logit gap as the sum of each token's contribution (`contributions(model,
    ids)`, chapter 11's `token_contributions`) and the head's bias, checked to add up.

    Described in chapter 11, section "Why it errs, token by token"."""
    ids = torch.tensor([encode_review(text, max_len=max_len)])
    shares = contributions(model, ids)[0]
    with torch.no_grad():
        logits = model(ids)[0]
    bias = (model.classifier.bias[1] - model.classifier.bias[0]).item()
    gap = (logits[1] - logits[0]).item()
    holds(abs(shares.sum().item() + bias - gap) < 1e-4,
          f"the contributions of {text!r} and the bias add up to its logit gap")
    real = ids[0] != PAD_ID
    tokens = [show_token(i) for i in ids[0][real].tolist()]
    cells = [f"`{token}` {share:+.3f}"
             for token, share in zip(tokens, shares[real].tolist())]
    return Markdown(f"gap {gap:+.2f} = {' '.join(cells)} {bias:+.3f} (bias)")


def spread(item: dict) -> str:
    """The smallest and largest contribution of a recorded review's tokens.

    Described in chapter 11, section "Why it errs, token by token"."""
    shares = item["contributions"]
    return f"{min(shares):+.2f} .. {max(shares):+.2f}"


def with_verdict(items: list[dict]) -> float:
    """The share of all tokens whose contribution pushes the way the verdict went.

    Described in chapter 11, section "Why it errs, token by token"."""
    pushes = [(c > 0) == (item["label"] == "positive")
              for item in items for c in item["contributions"]]
    return sum(pushes) / len(pushes)


def largest_errors_table(recorded: dict) -> Markdown:
    """The test reviews the full run got most confidently wrong, with the spread of their
    contributions; glues what the prose says of the contributions.

    Described in chapter 11, section "Why it errs, token by token"."""
    not_bad = recorded_item(recorded, "Not bad at all.")
    not_bad_shares = dict(zip(not_bad["tokens"], not_bad["contributions"]))
    glue_md("not_bad_bad", f"{not_bad_shares[' bad']:+.2f}")
    glue_md("not_bad_not", f"{not_bad_shares['Not']:+.2f}")
    glue_md("not_bad_spread", spread(not_bad))
    glue_md("with_verdict", f"{with_verdict(recorded['predictions']):.0%}")
    glue_md("errors_with_verdict", f"{with_verdict(recorded['largest_errors']):.0%}")
    error_rows = []
    for item in recorded["largest_errors"]:
        text = item["text"][:75].replace("|", "/").replace("`", "'").replace("<br />", " ")
        error_rows.append([text + "...", item["true_label"],
                           f"{item['label']} ({item['probabilities'][item['label']]:.4f})",
                           spread(item)])
    glue_md("errors_shown", str(len(error_rows)))
    return markdown_table(["review (start)", "rated", "model says",
                           "contributions, min .. max"], error_rows)


def check_web_model(root: Path) -> None:
    """What the page says of the model its browser box serves, checked against the records:
    seed 0 of the model validation chose where it held out whole films
    (`imdb_taught_blocks.json`: the whole-review classifier taught by NBSVM, on reviews and,
    where validation chose it, on their sentences too), exported as
    `web_classifier_precision.json` measured it (a build without the exported model shows
    the box's export instructions instead).

    Described in chapter 11, section "Try it"."""
    results = root / "book" / "results"
    precision = WEB_CLASSIFIER_PRECISION.read(results)
    blocks = IMDB_TAUGHT_BLOCKS.read(results)
    best = blocks["best_transformer_test_accuracy"]
    holds(best["model"].startswith(TAUGHT_MODEL),
          "the served model's kind is the one chosen on validation")
    served_run = blocks["runs"][best["arm"]]["0"]
    holds(precision["checkpoint"]["sha256"] == served_run["checkpoint_sha256"],
          "the precision record measured seed 0 of the taught runs")
    holds(precision["truncation"] == "windows", "the served model reads whole reviews")
    holds(precision["exports"]["float32"]["test_accuracy"]
          == served_run["test"]["accuracy"], "the exported model's test accuracy is the run's")
    served_path = root / "_static" / "models" / "imdb" / "manifest.json"
    if served_path.is_file():
        served = json.loads(served_path.read_text())
        holds(served["checkpoint"]["sha256"] == precision["checkpoint"]["sha256"],
              "the box serves the recorded checkpoint")
        holds(served["files"]["model.onnx"]["bytes"]
              == precision["exports"]["float16"]["model_bytes"],
              "the box serves the half-precision export the record measured")
    glue_md("web_accuracy", f"{100 * served_run['test']['accuracy']:.2f}%")
    glue_md("web_verdicts_changed", f"{precision['verdicts_that_differ']:,}")


def points(accuracy_value: float) -> str:
    """An accuracy in % with one decimal.

    Described in chapter 11, section "Against the Transformer"."""
    return f"{100 * accuracy_value:.1f}%"


def standard_error_points(accuracy_value: float, reviews: int) -> float:
    """The standard error of an accuracy measured on `reviews` reviews, in points.

    Described in chapter 11, section "Against the Transformer"."""
    return 100 * (accuracy_value * (1 - accuracy_value) / reviews) ** 0.5


def baselines_table(baselines_run: dict, transformer_run: dict) -> Markdown:
    """The three baselines' full runs against the Transformer's; glues what the prose says
    of them, after checking that both read the same reviews.

    Described in chapter 11, section "Against the Transformer"."""
    for split in ("train", "test"):
        ours = baselines_run["data"]["splits"][split]["fingerprint"]
        theirs = transformer_run["data"]["splits"][split]["fingerprint"]
        holds(ours == theirs, f"the baselines and the Transformer read the same {split} reviews")
    measured = {row["model"]: row for row in baselines_run["test"]}
    majority_run = measured["majority class"]
    bag_run = measured["bag of words, logistic regression"]
    nbsvm_run = measured["NBSVM, uni+bigrams"]
    transformer_accuracy = transformer_run["test"]["accuracy"]
    transformer_seconds = transformer_run["seconds"]["total"]
    transformer_train_reviews = (transformer_run["data"]["splits"]["train"]["reviews"]
                                 - transformer_run["data"]["validation_reviews"])
    baseline_rows = [
        ["majority class", "the labels only", "none", majority_run],
        ["logistic regression", "bag of words", f"{bag_run['features']:,} words", bag_run],
        ["NBSVM", "bag of uni+bigrams", f"{nbsvm_run['features']:,} n-grams", nbsvm_run],
    ]
    table_rows = [[name, reads, features, f"{100 * run['accuracy']:.2f}%",
                   f"{run['seconds']['total']:,.0f}"]
                  for name, reads, features, run in baseline_rows]
    table_rows.append(["Transformer, from scratch", "GPT-2 tokens, in order",
                       f"{transformer_run['parameters']:,} parameters",
                       f"{100 * transformer_accuracy:.2f}%", f"{transformer_seconds:,.0f}"])

    validation = baselines_run["validation"]
    test_reviews = nbsvm_run["examples"]
    nbsvm_gap = 100 * (nbsvm_run["accuracy"] - transformer_accuracy)
    bag_gap = 100 * (bag_run["accuracy"] - transformer_accuracy)
    test_se = standard_error_points(transformer_accuracy, test_reviews)
    glue_md("baseline_val_reviews", f"{validation['reviews']:,}", str(validation["reviews"]))
    glue_md("baseline_val_seed", str(validation["seed"]))
    train_reviews = baselines_run["data"]["splits"]["train"]["reviews"]
    glue_md("baseline_train_reviews", f"{train_reviews:,}", str(train_reviews))
    glue_md("baseline_test_reviews", f"{test_reviews:,}", str(test_reviews))
    hardware = baselines_run["hardware"]
    glue_md("baseline_hardware", f"{hardware['cpu']}, {hardware['logical_cpus']} logical "
            f"CPUs, {hardware['torch_threads']} torch thread(s)", hardware_zh(hardware))
    glue_md("majority_accuracy", points(majority_run["accuracy"]))
    glue_md("bag_accuracy", points(bag_run["accuracy"]))
    glue_md("nbsvm_accuracy", points(nbsvm_run["accuracy"]))
    glue_md("transformer_accuracy", points(transformer_accuracy))
    glue_md("nbsvm_gap", f"{abs(nbsvm_gap):.1f}")
    glue_md("bag_gap", f"{abs(bag_gap):.1f}")
    glue_md("test_se", f"{test_se:.1f}")
    glue_md("nbsvm_seconds", f"{nbsvm_run['seconds']['total']:.0f}")
    glue_md("bag_seconds", f"{bag_run['seconds']['total']:.0f}")
    glue_md("transformer_minutes", f"{transformer_seconds / 60:.1f}")
    glue_md("transformer_train_reviews", f"{transformer_train_reviews:,}")
    glue_md("paper_nbsvm", points(PAPER_NBSVM_ACCURACY))
    glue_md("transformer_parameters", f"{transformer_run['parameters']:,}",
            str(transformer_run["parameters"]))
    glue_md("smaller_gap_in_se", f"{min(nbsvm_gap, bag_gap) / test_se:.0f}")
    chosen_bag = validation["bag_of_words"]["chosen"]
    chosen_nbsvm = validation["nbsvm"]["chosen"]
    bag_setting = (f"{'binary' if chosen_bag['binary'] else 'tf (count)'} features, "
                   f"min count {chosen_bag['min_count']}, l2 = {chosen_bag['l2']:g}")
    glue_md("chosen_bag", bag_setting)
    glue_md("chosen_nbsvm", f"min count {chosen_nbsvm['min_count']}, "
            f"l2 = {chosen_nbsvm['l2']:g}, beta = {chosen_nbsvm['beta']:g}")
    for name, record in (("baseline", baselines_run), ("transformer", transformer_run)):
        load = recorded_load(record)
        glue_md(f"{name}_load", f"{load['start']:.1f} at the start and "
                f"{load['end']:.1f} at the end{busy_note(record)}")
    # Times compare only when both were taken on a quiet machine of the same kind.
    same_conditions = (not recorded_load(baselines_run)["busy"]
                       and not recorded_load(transformer_run)["busy"]
                       and baselines_run["hardware"]["cpu"]
                       == transformer_run["hardware"]["cpu"])
    speed_ratio = transformer_seconds / nbsvm_run["seconds"]["total"]
    glue_md("speed_comparison",
            f", which was {speed_ratio:.0f} times faster" if same_conditions else
            "; the two were timed under different loads, so their times are not compared",
            f"，而 NBSVM 快 {speed_ratio:.0f} 倍" if same_conditions else
            "；两者是在不同负载下计时的，所以不比较它们的用时")
    holds(min(nbsvm_gap, bag_gap) > 2 * test_se, "both baselines beat the Transformer")
    test_positive = baselines_run["data"]["splits"]["test"]["positive"]
    holds(2 * test_positive == test_reviews, "the test set is balanced")
    holds(nbsvm_run["seconds"]["total"] < transformer_seconds, "NBSVM takes less time")
    return markdown_table(["model", "reads", "features or parameters", "test accuracy",
                           "train + predict, s"], table_rows)


def grid_table(results: list[dict], row_keys: list[str],
               label: Callable[..., str]) -> Markdown:
    """A row per setting of `row_keys`, a column per l2: validation accuracies in %.

    Described in the appendix "Models that count", section "How the settings were chosen"."""
    penalties = sorted({result["l2"] for result in results})
    cells: dict[tuple, dict[float, dict]] = {}
    for result in results:
        setting = tuple(result[key] for key in row_keys)
        cells.setdefault(setting, {})[result["l2"]] = result
    best_result = max(results, key=lambda result: result["val_accuracy"])
    rows = []
    for setting, by_l2 in cells.items():
        row = [label(*setting)]
        for l2 in penalties:
            text = f"{100 * by_l2[l2]['val_accuracy']:.2f}"
            row.append(f"**{text}**" if by_l2[l2] is best_result else text)
        rows.append(row)
    return markdown_table(["setting \\ l2", *(f"{l2:g}" for l2 in penalties)], rows)


def grid_tables(baselines_run: dict) -> list[Markdown]:
    """The validation grids of the bag of words and of NBSVM, the chosen settings in bold;
    glues the held-out reviews' count and standard error, and how often the paper's
    beta = 0.25 did worse than a larger one.

    Described in the appendix "Models that count", section "How the settings were chosen"."""
    validation = baselines_run["validation"]
    grid_accuracies = [result["val_accuracy"] for model in ("bag_of_words", "nbsvm")
                       for result in validation[model]["results"]]
    glue_count("grid_reviews", validation['reviews'])
    glue_md("grid_se", f"{standard_error_points(mean(grid_accuracies), validation['reviews']):.1f}")
    by_setting: dict[tuple, dict[float, float]] = {}
    for result in validation["nbsvm"]["results"]:
        setting = (result["min_count"], result["l2"])
        by_setting.setdefault(setting, {})[result["beta"]] = result["val_accuracy"]
    quarter_worse = sum(accuracies[0.25] < max(accuracies.values())
                        for accuracies in by_setting.values())
    glue_md("beta_quarter_worse",
            f"all {quarter_worse}" if quarter_worse == len(by_setting)
            else f"{quarter_worse} of the {len(by_setting)}")
    return [
        grid_table(validation["bag_of_words"]["results"], ["binary", "min_count"],
                   lambda binary, count: f"{'binary' if binary else 'tf'}, min count {count}"),
        grid_table(validation["nbsvm"]["results"], ["min_count", "beta"],
                   lambda count, beta: f"min count {count}, beta {beta:g}"),
    ]


def score(run: dict, split: str) -> float:
    """A run's accuracy in %: its test accuracy, or its best validation accuracy.

    Described in the appendix "Experiments behind chapter 11", "Why the first Transformer loses"."""
    return 100 * (run["test"]["accuracy"] if split == "test" else
                  max(r["val_accuracy"] for r in run["history"]))


def paired(ablations: dict, variant: str, split: str) -> dict:
    """Variant minus preset, seed by seed, in points, with its 95% t-interval.

    Described in the appendix "Experiments behind chapter 11", "Why the first Transformer loses"."""
    runs = ablations["runs"]
    seeds = sorted(runs["preset"])
    return paired_difference([score(runs[variant][s], split) for s in seeds],
                             [score(runs["preset"][s], split) for s in seeds])


def ablation_table(ablations: dict) -> Markdown:
    """Each variant's accuracy over the seeds and its paired difference from the preset;
    glues the verdicts the prose reads and checks them.

    Described in the appendix "Experiments behind chapter 11", "Why the first Transformer loses"."""
    seeds = sorted(ablations["runs"]["preset"])
    rows = []
    for variant, runs in ablations["runs"].items():
        cells = [variant]
        for split in ("validation", "test"):
            scores = [score(runs[s], split) for s in seeds]
            cells.append(f"{mean(scores):.2f} ± {stdev(scores):.2f}")
            gap = None if variant == "preset" else paired(ablations, variant, split)
            cells.append("" if gap is None else
                         f"{gap['mean']:+.2f} [{gap['low']:+.2f}, {gap['high']:+.2f}]")
        rows.append(cells + [f"{mean(runs[s]['seconds']['train'] for s in seeds) / 60:.1f}"])

    def verdict(variant: str, split: str) -> str:
        gap = paired(ablations, variant, split)
        holds_zero = gap["low"] <= 0 <= gap["high"]
        return interval_text(gap) + (", an interval that holds zero" if holds_zero else "")

    for variant, key in (("no attention", "bag"), ("max_len=512", "long"),
                         ("lower-cased", "lower")):
        for measure, short in (("validation", "val"), ("test", "test")):
            said = verdict(variant, measure)
            glue_md(f"{key}_{short}_gap", said, in_chinese(said))
    over = {v: mean(ablations["runs"][v][s]["data"]["train_tokens"]["fraction_over_budget"]
                    for s in seeds) for v in ("preset", "max_len=512")}
    glue_md("short_covered", f"{1 - over['preset']:.0%}")
    glue_md("long_covered", f"{1 - over['max_len=512']:.0%}")
    chosen_variant = max(ablations["runs"], key=lambda v: mean(
        score(ablations["runs"][v][s], "validation") for s in seeds))
    glue_md("chosen_variant", f"`{chosen_variant}`")
    minutes = {v: mean(ablations["runs"][v][s]["seconds"]["train"] for s in seeds)
               for v in ("preset", "max_len=512")}
    glue_md("long_cost", f"{minutes['max_len=512'] / minutes['preset']:.1f}")
    glue_md("bag_points", f"{-paired(ablations, 'no attention', 'test')['mean']:.1f}")
    # The prose reads: attention is worth points on both splits (the interval below zero,
    # every seed), case nothing three seeds can see, and twice the context about half a
    # point on test, an interval that holds zero.
    for split in ("validation", "test"):
        runs = ablations["runs"]
        holds(paired(ablations, "no attention", split)["high"] < 0 and all(
            score(runs["no attention"][s], split) < score(runs["preset"][s], split)
            for s in seeds), f"attention is worth points on {split}, with every seed")
        gap = paired(ablations, "lower-cased", split)
        holds(gap["low"] <= 0 <= gap["high"], f"lower-casing: an interval holding zero ({split})")
    gap = paired(ablations, "max_len=512", "test")
    holds(0.25 < gap["mean"] < 1 and gap["low"] <= 0 <= gap["high"],
          "twice the context: about half a point on test, an interval that holds zero")
    return markdown_table(["variant", "validation %, mean ± sd", "minus preset [95% interval]",
                           "test %, mean ± sd", "minus preset [95% interval]", "train min"],
                          rows)


def margins(ablations: dict, seed: str, split: str
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each model's margin (above 0: "positive") on a seed's `val` or `test` reviews:
    the Transformer's log-odds and NBSVM's w . x + b; and the true labels.

    Described in the appendix "Models that count", "Beside the Transformer"."""
    outputs = ablations["preset_outputs"][seed]
    p = np.clip(outputs[split]["transformer"], 1e-6, 1 - 1e-6)
    truth = (np.array(ablations["train_labels"])[outputs["val_index"]] if split == "val"
             else np.array(ablations["test_labels"]))
    return np.log(p / (1 - p)), np.array(outputs[split]["nbsvm"]), truth


def ensemble_accuracy(ablations: dict, seed: str) -> tuple[float, float]:
    """Weight w of the Transformer in w * t / sd(t) + (1 - w) * n / sd(n), chosen on
    validation; the ensemble's test accuracy in % with that weight, read once.

    Described in the appendix "Models that count", "Beside the Transformer"."""
    t_val, n_val, y_val = margins(ablations, seed, "val")
    t_test, n_test, y_test = margins(ablations, seed, "test")

    def votes(t: np.ndarray, n: np.ndarray, w: float) -> np.ndarray:
        return w * t / t_val.std() + (1 - w) * n / n_val.std() > 0

    weight = max(np.linspace(0, 1, 21),
                 key=lambda w: (votes(t_val, n_val, w) == y_val).mean())
    return weight, 100 * (votes(t_test, n_test, weight) == y_test).mean()


def ensemble_table(ablations: dict) -> Markdown:
    """Seed by seed, where the Transformer and NBSVM err, and the ensemble of the two;
    glues what the prose says of them and checks it.

    Described in the appendix "Models that count", "Beside the Transformer"."""
    rows, nbsvm_accuracy, ensemble_test, weights = [], [], [], []
    for seed in sorted(ablations["runs"]["preset"]):
        transformer, nbsvm, truth = margins(ablations, seed, "test")
        t_wrong, n_wrong = (transformer > 0) != truth, (nbsvm > 0) != truth
        rows.append([seed, *(f"{100 * x.mean():.2f}" for x in
                             (t_wrong & n_wrong, t_wrong & ~n_wrong, ~t_wrong & n_wrong))])
        nbsvm_accuracy.append(100 * (1 - n_wrong.mean()))
        weight, accuracy = ensemble_accuracy(ablations, seed)
        weights.append(weight)
        ensemble_test.append(accuracy)
        rows[-1] += [f"{nbsvm_accuracy[-1]:.2f}", f"{weight:.2f}", f"{accuracy:.2f}"]
    glue_md("ensemble_gain",
            interval_text(paired_difference(ensemble_test, nbsvm_accuracy)))
    glue_md("ensemble_mean", f"{mean(ensemble_test):.2f}%")
    glue_md("nbsvm_22500", f"{mean(nbsvm_accuracy):.2f}%")
    both_wrong = mean(float(row[1]) for row in rows)
    only_t, only_n = (mean(float(row[i]) for row in rows) for i in (2, 3))
    glue_md("both_wrong", f"{both_wrong:.1f}%")
    glue_md("only_transformer", f"{only_t:.1f}%")
    glue_md("only_nbsvm", f"{only_n:.1f}%")
    glue_md("weights", ", ".join(f"{w:.2f}" for w in weights))
    holds(max(weights) < 0.5 and only_t > 2 * only_n,
          "the ensemble leans on NBSVM, and the Transformer's own errors are the larger group")
    return markdown_table(["seed", "both wrong %", "only Transformer %", "only NBSVM %",
                           "NBSVM test %", "weight", "ensemble test %"], rows)


def reliability_diagram(ablations: dict) -> None:
    """The fraction of positive test reviews against the predicted probability, in ten
    groups, per seed; glues the calibration figures the prose quotes and checks them.

    Described in the appendix "Models that count", "Beside the Transformer"."""
    fig, ax = plt.subplots(figsize=(4, 3.6))
    calibration_errors, ends = [], []  # ends: (share sure, accuracy if sure, if not)
    for seed in sorted(ablations["runs"]["preset"]):
        probability = np.array(ablations["preset_outputs"][seed]["test"]["transformer"])
        truth = np.array(ablations["test_labels"])
        group = np.minimum((probability * 10).astype(int), 9)
        shown = [g for g in range(10) if (group == g).any()]
        predicted = [probability[group == g].mean() for g in shown]
        observed = [truth[group == g].mean() for g in shown]
        ax.plot(predicted, observed, "o-", markersize=3, label=f"seed {seed}")
        holds(observed[shown.index(1)] > predicted[shown.index(1)]
              and observed[shown.index(8)] < predicted[shown.index(8)],
              "too sure in both directions (groups 0.1-0.2 and 0.8-0.9)")
        calibration_errors.append(sum((group == g).mean() * abs(p - o)
                                      for g, p, o in zip(shown, predicted, observed)))
        sure = (probability < 0.1) | (probability > 0.9)
        ends.append((sure.mean(), ((probability > 0.5) == truth)[sure].mean(),
                     ((probability > 0.5) == truth)[~sure].mean()))
    ax.plot([0, 1], [0, 1], color="gray", linestyle=":", label="calibrated")
    ax.set_xlabel("predicted probability of positive")
    ax.set_ylabel("fraction positive")
    ax.legend(fontsize="small")
    plt.show()
    glue_md("calibration_error", ", ".join(f"{100 * e:.1f}" for e in calibration_errors))
    glue_md("sure_share", f"{mean(e[0] for e in ends):.0%}")
    glue_md("sure_accuracy", f"{mean(e[1] for e in ends):.0%}")
    glue_md("unsure_accuracy", f"{mean(e[2] for e in ends):.0%}")
