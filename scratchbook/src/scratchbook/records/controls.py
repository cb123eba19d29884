"""Chapter 11's controls and its word-order test: the records of where the taught classifier's
lift comes from and of what it makes of word order, read, checked and laid out as the tables of
chapter 11 and of its appendix "Experiments behind chapter 11", with the numbers their prose
quotes.

Written by hand, not exported. The records, each written by the script it names:

- `imdb_controls.json` (`tools/records/ch11_controls.py`): bag of words, NBSVM and the
  Transformer, untaught and taught by NBSVM, five seeds each, validation held out in blocks;
  the Transformer taught by itself (a row with no runs until they are gathered) and the served
  arm; paired differences over seeds, and per-review tests where predictions were kept;
- `imdb_taught_blocks.json` (`tools/records/ch11_taught_record.py`): the served arm against the
  counting baselines fitted on all 25,000 training reviews;
- `order_pairs_found.json`, `order_pairs_scores.json`, `order_pairs_reading.json`
  (`tools/records/ch11_order_pairs.py`, `ch11_order_scores.py`, `ch11_order_reading.py`): the
  order pairs, who found and checked them, each model's score on each half, the remedy chosen
  on the validation half, and how the served model reads a pair;
- `imdb_sentences_equal.json` (`tools/records/ch11_sentences_equal.py`): the served arm and the
  counting models fitted on exactly its inputs, on the validation sentences.

Each `*_figures` function returns the text the prose glues, keyed by glue name, and refuses
(ValueError, naming the claim) a record that no longer supports what the prose says of it. It
recomputes nothing but intervals, from the records' own per-seed numbers.

What this deliberately does not handle: training or scoring anything (the scripts do), and
records of other arms, teachers or holdouts than these.
"""

from __future__ import annotations

import math
from pathlib import Path

from IPython.display import Markdown

from scratchformer.measure.statistics import interval_text, paired_difference
from scratchbook.pages import in_chinese, markdown_table
from scratchbook.record import Record, RecordError
from scratchbook.records import (IMDB_CONTROLS, IMDB_SENTENCES_EQUAL, IMDB_TAUGHT_BLOCKS,
                                 ORDER_PAIRS, ORDER_PAIRS_FOUND, ORDER_PAIRS_READING,
                                 ORDER_PAIRS_SCORES)

# The control table's rows, in the page's order: (record key, model, teacher).
CONTROL_ROWS = (
    ("bag_of_words", "bag of words", "none"),
    ("nbsvm", "NBSVM", "none"),
    ("transformer", "Transformer", "none"),
    ("bag_of_words_taught", "bag of words", "NBSVM"),
    ("nbsvm_taught", "NBSVM", "NBSVM"),
    ("transformer_self", "Transformer", "itself (its untaught run)"),
    ("transformer_nbsvm", "Transformer", "NBSVM"),
    ("transformer_served", "Transformer (served)", "NBSVM, + 2 sentences a review"),
)
RUNNING = "not run yet"  # what the table shows in a row whose runs are not in the record yet
SERVED_ARM = "nbsvm, sentences 2"  # the blocks record's name for the served arm


def require(holds: bool, claim: str) -> None:
    """Raise ValueError naming `claim` when a record no longer supports it."""
    if not holds:
        raise ValueError(f"the records no longer support chapter 11's reading: {claim}")


def points(difference: dict) -> dict:
    """A difference of accuracies (fractions) in points: its mean and interval times 100."""
    return {**difference, **{k: 100 * difference[k] for k in ("mean", "low", "high")}}


def read_controls(path: Path | None = None) -> dict:
    """`imdb_controls.json` (by default the book's), every row of the table present and every
    measured row (one with seeds) holding its per-seed validation and test accuracies and its
    summaries; a RecordError naming the file otherwise."""
    record = IMDB_CONTROLS.read(path)
    source = IMDB_CONTROLS.locate(path)
    for key, _, _ in CONTROL_ROWS:
        entry = record["table"].get(key)
        if entry is None or "seeds" not in entry or "rows" not in entry:
            raise RecordError(f"{source}: no row {key!r} with its seeds; write it again with "
                              f"{IMDB_CONTROLS.writer}")
        if entry["seeds"] and not all(measure in entry for measure in ("validation", "test")):
            raise RecordError(f"{source}: row {key!r} has seeds but no summaries; write it "
                              f"again with {IMDB_CONTROLS.writer}")
    return record


def measured(entry: dict) -> bool:
    """Whether a row of the control table has runs (two seeds or more)."""
    return len(entry["seeds"]) >= 2 and "test" in entry


def _percent(value: float) -> str:
    return f"{100 * value:.2f}%"


def _updates(entry: dict) -> str:
    """The optimizer updates a Transformer row made, one number if every seed made as many."""
    counts = sorted(set(entry.get("updates", {}).values()))
    if not counts:
        return ""
    return f"{counts[0]:,}" if len(counts) == 1 else f"{counts[0]:,} to {counts[-1]:,}"


def controls_table(path: Path | None = None, minutes: bool = False,
                   compact: bool = False) -> Markdown:
    """The control table: a row per model and teacher (bag of words, NBSVM and the
    Transformer, untaught, then taught), its seeds, mean validation accuracy (the block
    holdout), mean test accuracy with its 95% t-interval over seeds, and the optimizer updates a
    Transformer made; with `minutes`, the mean minutes to the trained model too (teachers
    included); with `compact` (chapter 11's), the model, its teacher and the test column only.
    A row without runs in the record reads "not run yet"."""
    record = read_controls(path)
    rows = []
    for key, model, teacher in CONTROL_ROWS:
        entry = record["table"][key]
        if measured(entry):
            low, high = entry["test"]["interval_95"]
            cells = [str(len(entry["seeds"])), _percent(entry["validation"]["mean"]),
                     f"{_percent(entry['test']['mean'])} ({100 * low:.2f}–{100 * high:.2f})",
                     _updates(entry)]
            if minutes:
                cells.append(f"{entry['minutes']['mean']:.1f}")
        else:
            cells = ["", RUNNING, RUNNING, ""] + ([""] if minutes else [])
        rows.append([model, teacher, *cells])
    header = ["model", "taught by", "seeds", "validation", "test (95% interval)",
              "updates"] + (["minutes"] if minutes else [])
    if compact:
        return markdown_table(header[:2] + header[4:5], [row[:2] + row[4:5] for row in rows])
    return markdown_table(header, rows)


def seed_difference(record: dict, key: str, other: str, measure: str = "test") -> dict | None:
    """Row `key` less row `other`, seed by seed on the seeds both ran, with its 95%
    t-interval (`paired_difference`); None under two shared seeds."""
    rows = record["table"]
    seeds = sorted(set(rows[key]["rows"]) & set(rows[other]["rows"]), key=int)
    if len(seeds) < 2:
        return None
    return paired_difference([rows[key]["rows"][s][measure] for s in seeds],
                             [rows[other]["rows"][s][measure] for s in seeds])


def self_taught_figures(record: dict) -> dict[str, str]:
    """What the pages say of the Transformer taught by itself, read from its row, as text keyed
    by glue name (English, then `_zh` in the Chinese edition's words). While the row has no
    runs, `control_self` and `control_self_full` say it is not run yet and what adds it. Else
    `control_self` is its difference from its own untaught runs (its teachers), seed by seed;
    `control_self_full` that, after its test accuracy and before its difference from the
    Transformer taught by NBSVM; `control_self_lift` the difference alone; `self_processor`
    where it ran; `self_teachers_same` how many teachers are the table's untaught runs to the
    last bit; `self_per_review` its per-review tests against bag of words taught by NBSVM
    (`per_review`), or that it has none.

    Refuses (ValueError) a record that no longer supports the pages' reading of the row: its
    own untaught runs lift the Transformer (interval above zero), and NBSVM lifts it more (the
    row less the Transformer taught by NBSVM, interval below zero).

    Described in the appendix to chapter 11, "The control table in full"."""
    from scratchbook.records.running import processor_name

    entry = record["table"]["transformer_self"]
    if not measured(entry):
        command = "`tools/records/ch11_taught.py --teacher transformer`"
        adds = "`tools/records/ch11_controls.py --self`"
        running = (f"is {RUNNING}: its five runs, each taught by its own seed's untaught run "
                   f"({command}), are the control this table still lacks; {adds} adds them to "
                   "the record")
        running_zh = (f"尚未运行：它的五次运行各以同一种子的未受教运行为老师（{command}），"
                      f"是这张表仍缺的对照；{adds} 会把它们加入记录")
        return {"control_self": running, "control_self_zh": running_zh,
                "control_self_full": running, "control_self_full_zh": running_zh}
    runs = list(entry["rows"].values())
    lift = seed_difference(record, "transformer_self", "transformer")
    versus = seed_difference(record, "transformer_self", "transformer_nbsvm")
    require(lift is not None and lift["low"] > 0,
            "the Transformer's own untaught runs lift it")
    require(versus is not None and versus["high"] < 0,
            "NBSVM lifts the Transformer more than its own untaught runs do")
    lift_text, versus_text = interval_text(points(lift)), interval_text(points(versus))
    same = sum(bool(run.get("teacher_is_the_untaught_run")) for run in runs)
    all_same = same == len(runs)
    whose = "its own untaught runs, which taught it" + (
        " (the table's, to the last bit)" if all_same else "")
    whose_zh = "教它的、它自己的未受教运行" + ("（正是表中那几次，一位不差）" if all_same else "")
    if all_same:
        teachers = (f"all {len(runs)} came out the table's untaught runs to the last bit "
                    "(the same checkpoints)")
        teachers_zh = f"{len(runs)} 个老师都与表中未受教的运行一位不差（同一个检查点）"
    else:
        teachers = (f"{same} of {len(runs)} came out the table's untaught runs to the last bit "
                    "(the same checkpoints); the others differ from them")
        teachers_zh = f"{len(runs)} 个老师中有 {same} 个与表中未受教的运行一位不差（同一个检查点），其余的不同"
    low, high = entry["test"]["interval_95"]
    seeds, mean = len(entry["seeds"]), _percent(entry["test"]["mean"])
    processors = sorted({processor_name({"cpu": run["processor"]}) for run in runs})
    return {
        **per_review("self_per_review",
                     record["comparisons"]["transformer_self"]["bag_of_words_taught"]),
        "control_self": f"differs by {lift_text} from {whose}",
        "control_self_zh": f"与{whose_zh}相差 {in_chinese(lift_text)}",
        "control_self_full": (f"scores {mean} on test over {seeds} seeds (95% interval "
                              f"{100 * low:.2f}% to {100 * high:.2f}%); less {whose}, "
                              f"{lift_text}; less the Transformer taught by NBSVM, {versus_text}"),
        "control_self_full_zh": (f"在 {seeds} 个种子上的测试得分为 {mean}（95% 区间为 "
                                 f"{100 * low:.2f}% 到 {100 * high:.2f}%）；逐个种子减去"
                                 f"{whose_zh}，为 {in_chinese(lift_text)}；逐个种子减去由 NBSVM "
                                 f"教的 Transformer，为 {in_chinese(versus_text)}"),
        "control_self_lift": lift_text,
        "self_processor": " and ".join(processors),
        "self_processor_zh": " 和 ".join(processors),
        "self_teachers_same": teachers, "self_teachers_same_zh": teachers_zh}


def bootstrap_text(bootstrap: dict) -> str:
    """A bootstrap over test reviews in points: `-0.24 points (95% bootstrap interval -0.56
    to +0.08)`."""
    low, mean, high = (100 * bootstrap[key] for key in ("low", "mean", "high"))
    return f"{mean:+.2f} points (95% bootstrap interval {low:+.2f} to {high:+.2f})"


def per_review(name: str, versus: dict) -> dict[str, str]:
    """`<name>` (and `_zh`): a taught Transformer less a counting model, review by review: the
    bootstrap's interval over test reviews, and on how many seeds McNemar's exact test gives p
    below 0.01, with the range of its p values. Without per-review predictions, says so."""
    tests = versus["per_review"]
    bootstrap, mcnemar = tests["bootstrap_test"], tests["mcnemar_test"]
    if bootstrap is None:
        return {name: "is not tested review by review: the counting runs' margins or its "
                      "predictions are missing",
                f"{name}_zh": "没有逐条影评的检验：缺少计数模型的边距或它的预测"}
    below = sum(test["p_value"] < 0.01 for test in mcnemar.values())
    low, high = (f(test["p_value"] for test in mcnemar.values()) for f in (min, max))
    boot, seeds = bootstrap_text(bootstrap), len(mcnemar)
    return {
        name: (f"is {boot}; McNemar's exact test gives p below 0.01 on "
               f"{below} of its {seeds} seeds (p from {low:.1g} to {high:.2f})"),
        f"{name}_zh": (f"的自助法结果为 {in_chinese(boot)}；McNemar 精确检验在它的 "
                       f"{seeds} 个种子中有 {below} 个给出低于 0.01 的 p 值（p 从 {low:.1g} "
                       f"到 {high:.2f}）")}


def controls_figures(path: Path | None = None) -> dict[str, str]:
    """The numbers chapter 11's control table is read with, as text keyed by glue name: the
    Transformer taught by NBSVM less bag of words taught the same way, and less NBSVM untaught,
    on test; what teaching adds to bag of words and to the Transformer, each against its own
    untaught runs; the updates each Transformer arm made; the taught arm's per-review tests
    against taught bag of words (`per_review`, `taught_per_review`); the served arm's on seed 0;
    and the row of the Transformer taught by itself (`self_taught_figures`).

    Refuses (ValueError) a record that no longer supports the chapter's reading: the taught
    Transformer not told apart from taught bag of words (its interval holds zero) and below
    untaught NBSVM; teaching lifting both bag of words and the Transformer (intervals above
    zero); the served arm's per-review test against taught bag of words on seed 0 recorded.

    Described in chapter 11, "Where the lift comes from"."""
    record = read_controls(path)
    table, comparisons = record["table"], record["comparisons"]
    taught = comparisons["transformer_nbsvm"]
    versus_bag, versus_nbsvm = taught["bag_of_words_taught"]["test"], taught["nbsvm"]["test"]
    bag_lift = seed_difference(record, "bag_of_words_taught", "bag_of_words")
    transformer_lift = seed_difference(record, "transformer_nbsvm", "transformer")
    served = comparisons["transformer_served"]["bag_of_words_taught"]
    mcnemar = served["per_review"]["mcnemar_test"].get("0")
    bootstrap = served["per_review"]["bootstrap_test"]
    require(versus_bag["low"] <= 0 <= versus_bag["high"],
            "the taught Transformer not told apart from bag of words taught the same way")
    require(versus_nbsvm["high"] < 0, "the taught Transformer below untaught NBSVM")
    require(bag_lift is not None and bag_lift["low"] > 0, "teaching lifts bag of words")
    require(transformer_lift is not None and transformer_lift["low"] > 0,
            "teaching lifts the Transformer")
    require(mcnemar is not None and bootstrap is not None,
            "the served arm tested review by review on seed 0")
    return {
        "control_seeds": str(len(table["transformer_nbsvm"]["seeds"])),
        "control_taught_minus_bag": interval_text(points(versus_bag)),
        "control_taught_minus_nbsvm": interval_text(points(versus_nbsvm)),
        "control_bag_lift": interval_text(points(bag_lift)),
        "control_transformer_lift": interval_text(points(transformer_lift)),
        "control_bag_taught": _percent(table["bag_of_words_taught"]["test"]["mean"]),
        "control_transformer_taught": _percent(table["transformer_nbsvm"]["test"]["mean"]),
        "updates_untaught": _updates(table["transformer"]),
        "updates_taught": _updates(table["transformer_nbsvm"]),
        "updates_served": _updates(table["transformer_served"]),
        **per_review("taught_per_review", taught["bag_of_words_taught"]),
        "served_mcnemar": (f"p = {mcnemar['p_value']:.2f}: {mcnemar['only_first_right']:,} "
                           f"test reviews only the served model gets right, "
                           f"{mcnemar['only_second_right']:,} only bag of words"),
        "served_bootstrap": bootstrap_text(bootstrap),
        **self_taught_figures(record),
        "served_mcnemar_zh": (f"p = {mcnemar['p_value']:.2f}：只有交互框所用的模型判对的测试影评有 "
                              f"{mcnemar['only_first_right']} 条，只有词袋判对的有 "
                              f"{mcnemar['only_second_right']} 条"),
    }


def served_figures(path: Path | None = None) -> dict[str, str]:
    """The served arm's own test differences from the counting baselines fitted on all 25,000
    training reviews (`imdb_taught_blocks.json`), seed by seed, and seed 0's test accuracy,
    as text keyed by glue name.

    Refuses (ValueError) a record in which the served arm is not above that bag of words and
    below that NBSVM, each interval clear of zero.

    Described in chapter 11, "The model the box serves"."""
    record = IMDB_TAUGHT_BLOCKS.read(path)
    arm = record["taught"][SERVED_ARM]
    bag, nbsvm = arm["against_counting"]["bag_of_words"], arm["against_counting"]["nbsvm"]
    require(bag["difference"]["low"] > 0, "the served arm above bag of words")
    require(nbsvm["difference"]["high"] < 0, "the served arm below NBSVM")
    low, high = arm["interval_95"]
    return {
        "served_mean": _percent(arm["mean"]),
        "served_interval": f"{100 * low:.2f}% to {100 * high:.2f}%",
        "served_minus_bag": interval_text(points(bag["difference"])),
        "served_minus_nbsvm": interval_text(points(nbsvm["difference"])),
        "served_bag": _percent(bag["accuracy"]),
        "served_nbsvm": _percent(nbsvm["accuracy"]),
        "served_seed0": _percent(record["runs"][SERVED_ARM]["0"]["test"]["accuracy"]),
    }


def provenance_table(record: Record) -> Markdown:
    """Who or what made a text set, who labelled it, when, and what it has shaped, as the
    Record says (`Record.provenance`); a ValueError for a record that says nothing."""
    if not record.provenance:
        raise ValueError(f"{record.name} carries no provenance")
    names = {"made_by": "made by", "labelled_by": "labelled by", "when": "when",
             "shaped_choices": "what it has shaped"}
    return markdown_table(["", record.name],
                          [[names.get(key, key), text] for key, text in record.provenance.items()])



def found_provenance_table(path: Path | None = None) -> Markdown:
    """Who or what found, checked and split the order pairs, as `order_pairs_found.json`
    itself says (its field `provenance`, which the Record requires), one row a field."""
    found = ORDER_PAIRS_FOUND.read(path)
    return markdown_table(["", ORDER_PAIRS_FOUND.name],
                          [[key.replace("_", " "), text]
                           for key, text in found["provenance"].items()])


# The order pairs.

ORDER_MODELS = {"served": "the served Transformer", "nbsvm": "NBSVM, uni+bigrams",
                "bag_of_words": "bag of words", "remedy": "the remedy (served, trained on)"}
ORDER_SETS = {"found, validation half": "validation half", "found, test half": "test half",
              "written": "30 written pairs"}


def _share(counts: dict) -> str:
    low, high = counts["interval_95"]
    return (f"{counts['ordered']} of {counts['pairs']} ({100 * counts['share_ordered']:.1f}%, "
            f"95% interval {100 * low:.1f}% to {100 * high:.1f}%)")


def binomial_two_sided(k: int, n: int) -> float:
    """The two-sided exact binomial p-value of `k` successes in `n` fair coin tosses."""
    tail = sum(math.comb(n, i) for i in range(min(k, n - k) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def order_scores_table(path: Path | None = None) -> Markdown:
    """Each model's order pairs ordered (the positive text scored strictly higher) on the
    validation half, the test half and the 30 written pairs, with its exact 95% interval
    (Clopper-Pearson), and the ties."""
    record = ORDER_PAIRS_SCORES.read(path)
    rows = []
    for key, name in ORDER_MODELS.items():
        row = record["table"][key]
        rows.append([name, *(f"{row[s]['ordered']}/{row[s]['pairs']} "
                             f"({100 * row[s]['share_ordered']:.1f}%; "
                             f"{100 * row[s]['interval_95'][0]:.1f}–"
                             f"{100 * row[s]['interval_95'][1]:.1f})"
                             + (f", {row[s]['tied']} tied" if row[s]["tied"] else "")
                             for s in ORDER_SETS)])
    return markdown_table(["model", *ORDER_SETS.values()], rows)


def remedy_table(path: Path | None = None) -> Markdown:
    """The remedy's epochs: updates, validation-half pairs ordered, validation accuracy and
    training loss, the chosen epoch in bold."""
    remedy = ORDER_PAIRS_SCORES.read(path)["models"]["remedy"]
    rows = []
    for epoch in remedy["history"]:
        pairs = epoch["pairs_validation"]
        cells = [str(epoch["epoch"]), f"{epoch['updates']:,}",
                 f"{pairs['ordered']} of {pairs['pairs']}",
                 _percent(epoch["validation_accuracy"]),
                 "" if epoch["train_loss"] is None else f"{epoch['train_loss']:.3f}"]
        if epoch["epoch"] == remedy["chosen_epoch"]:
            cells = [f"**{cell}**" if cell else cell for cell in cells]
        rows.append(cells)
    return markdown_table(["epoch", "updates", "validation half ordered",
                           "validation reviews", "training loss"], rows)


def order_reading_table(path: Path | None = None) -> Markdown:
    """How the served model reads the validation half's pairs: how far a clause pushes the
    logit gap the way it leans, first or second, stressed or not, and the share of a token's
    attention each head gives the connective and the other clause."""
    found = ORDER_PAIRS_READING.read(path)["found_validation"]
    push, attention = found["push_towards_lean"], found["attention_per_head"]
    rows = [[name, f"{push[key]:.3f}"] for key, name in (
        ("first_clause", "a clause standing first"), ("second_clause", "standing second"),
        ("stressed_clause", "the clause the construction stresses"),
        ("other_clause", "the other clause"))]
    rows += [[f"head {h + 1}: attention to the connective, to the other clause",
              f"{100 * joint:.1f}%, {100 * other:.1f}%"]
             for h, (joint, other) in enumerate(zip(attention["to_joint"],
                                                    attention["to_other_clause"]))]
    return markdown_table(["over the validation half's 150 pairs", "value"], rows)


def order_example_table(path: Path | None = None, index: int = 0) -> Markdown:
    """One written pair's two texts token by token: each token's contribution to the logit
    gap and its attention to the connective (heads averaged), from the reading record."""
    example = ORDER_PAIRS_READING.read(path)["examples"][index]
    rows = []
    for member in ("positive", "negative"):
        text = example[member]
        tokens = " ".join(f"`{t['token'].strip() or t['token']}` {t['contribution']:+.2f}"
                          for t in text["tokens"])
        rows.append([f"{member}: {text['text']}", f"{text['P_positive']:.2f}", tokens])
    return markdown_table(["text", "P(positive)", "each token's contribution"], rows)


def order_figures(path_scores: Path | None = None, path_found: Path | None = None,
                  path_reading: Path | None = None,
                  path_blocks: Path | None = None) -> dict[str, str]:
    """The numbers the prose quotes of the order pairs, as text keyed by glue name: how many
    were found and kept, the check, each model's pairs ordered on the test half and on the
    written pairs, the remedy (its choice, its pairs, its test accuracy against the served
    model's seed 0), and the served model's reading.

    Refuses (ValueError) records that no longer support the chapter's reading: bag of words
    tying every pair; the served model no better than a coin on the test half (its interval
    holds one half) and reversing more written pairs than it orders, two-sided p under 0.05;
    NBSVM ordering more than it on the test half; the remedy chosen on the validation half
    (the epoch with the most ordered), above one half on the test half, and below the served
    model's test accuracy; the served model pushing more with a clause standing first.

    Described in chapter 11, "When order decides"."""
    scores = ORDER_PAIRS_SCORES.read(path_scores)
    found = ORDER_PAIRS_FOUND.read(path_found)
    reading = ORDER_PAIRS_READING.read(path_reading)["found_validation"]
    table, remedy = scores["table"], scores["models"]["remedy"]
    test = {key: table[key]["found, test half"] for key in ORDER_MODELS}
    written = table["served"]["written"]
    untied = written["ordered"] + written["reversed"]
    written_p = binomial_two_sided(written["ordered"], untied)
    best = max(remedy["history"], key=lambda e: (e["pairs_validation"]["ordered"], -e["epoch"]))
    served_accuracy = IMDB_TAUGHT_BLOCKS.read(path_blocks)["runs"][SERVED_ARM]["0"]["test"]
    push = reading["push_towards_lean"]
    require(all(counts["tied"] == counts["pairs"] for counts in table["bag_of_words"].values()),
            "bag of words ties every pair")
    require(test["served"]["interval_95"][0] <= 0.5 <= test["served"]["interval_95"][1],
            "the served model no better than a coin on the test half")
    require(written["reversed"] > written["ordered"] and written_p < 0.05,
            "the served model reverses more written pairs than it orders, p under 0.05")
    require(test["nbsvm"]["ordered"] > test["served"]["ordered"],
            "NBSVM orders more test-half pairs than the served model")
    require(remedy["chosen_epoch"] == best["epoch"] and best["epoch"] > 0,
            "the remedy's epoch chosen on the validation half")
    require(test["remedy"]["share_ordered"] > 0.5
            and remedy["test"]["accuracy"] < served_accuracy["accuracy"],
            "the remedy above one half on the test half, at some test accuracy")
    require(push["first_clause"] > push["second_clause"], "the first clause pushes more")
    check = found["check"]["result"]
    return {
        "order_found": f"{found['found']:,}",
        "order_pairs": f"{found['size']:,}",
        "order_half": str(found["halves"]["test"]),
        "order_check": f"{check['agrees']} of {check['pairs']}",
        "order_check_disagrees": str(check["disagrees"]),
        "order_check_neither": str(check["neither"]),
        "order_served_test": _share(test["served"]),
        "order_served_share": f"{100 * test['served']['share_ordered']:.1f}%",
        "order_served_interval": (f"{100 * test['served']['interval_95'][0]:.1f}% to "
                                  f"{100 * test['served']['interval_95'][1]:.1f}%"),
        "order_nbsvm_test": _share(test["nbsvm"]),
        "order_nbsvm_share": f"{100 * test['nbsvm']['share_ordered']:.1f}%",
        "order_remedy_test": _share(test["remedy"]),
        "order_remedy_share": f"{100 * test['remedy']['share_ordered']:.1f}%",
        "order_remedy_interval": (f"{100 * test['remedy']['interval_95'][0]:.1f}% to "
                                  f"{100 * test['remedy']['interval_95'][1]:.1f}%"),
        "order_remedy_accuracy": _percent(remedy["test"]["accuracy"]),
        "order_served_accuracy": _percent(served_accuracy["accuracy"]),
        "order_remedy_pairs": f"{remedy['training_pairs']:,}",
        "order_remedy_replay": f"{remedy['replay_reviews']:,}",
        "order_remedy_minutes": f"{remedy['minutes']['total']:.1f}",
        "order_remedy_epochs": str(remedy["epochs"]),
        "order_remedy_validation": (f"{best['pairs_validation']['ordered']} of "
                                    f"{best['pairs_validation']['pairs']}"),
        "order_written_served": f"{written['ordered']} of {written['pairs']}",
        "order_written_reversed": str(written["reversed"]),
        "order_written_p": f"{written_p:.2f}",
        "order_written_nbsvm": f"{table['nbsvm']['written']['ordered']} of "
                               f"{table['nbsvm']['written']['pairs']}",
        "order_push_first": f"{push['first_clause']:.3f}",
        "order_push_second": f"{push['second_clause']:.3f}",
        "order_joint_attention": " and ".join(f"{100 * a:.1f}%" for a in
                                              reading["attention_per_head"]["to_joint"]),
        "order_stressed_second": f"{reading['stressed_second']} of {reading['pairs']}",
    }


# The served arm against counting models given its inputs, on validation sentences.

EQUAL_ROWS = (("served", "Transformer, served arm"),
              ("bag_of_words_untaught", "bag of words, fit split"),
              ("bag_of_words_sentences", "bag of words, the served arm's inputs"),
              ("nbsvm_untaught", "NBSVM, fit split"),
              ("nbsvm_sentences", "NBSVM, the served arm's inputs"))
EQUAL_MEASURES = {"validation_sentences": "sentences, labelled as their review",
                  "validation_labelled": "sentences, model-labelled"}


def sentences_equal_table(path: Path | None = None) -> Markdown:
    """The served arm and the counting models (fitted on the fit split, or on exactly the
    served arm's inputs) on the two kinds of validation sentences: mean accuracy over seeds
    with its 95% t-interval, and the served arm less each, seed by seed."""
    record = IMDB_SENTENCES_EQUAL.read(path)
    rows = []
    for key, name in EQUAL_ROWS:
        entry = record["table"][key]
        cells = [name]
        for measure in EQUAL_MEASURES:
            summary = entry[measure]
            cells.append(f"{_percent(summary['mean'])} ({100 * summary['low']:.1f}–"
                         f"{100 * summary['high']:.1f})")
            versus = record["comparisons"].get(f"served - {key}", {}).get(measure)
            cells.append("" if versus is None else
                         f"{100 * versus['mean']:+.2f} ({100 * versus['low']:+.2f} to "
                         f"{100 * versus['high']:+.2f})")
        rows.append(cells)
    header = ["model, fitted on"]
    for words in EQUAL_MEASURES.values():
        header += [words, "served less it"]
    return markdown_table(header, rows)


def sentences_equal_figures(path: Path | None = None) -> dict[str, str]:
    """The served arm less NBSVM fitted on its own inputs, on both kinds of validation
    sentences, and seed 0's McNemar p-values, as text keyed by glue name.

    Refuses (ValueError) a record in which NBSVM given the served arm's inputs is told apart
    from the served arm on either measure, or NBSVM fitted on whole reviews is not below it on
    the model-labelled sentences.

    Described in the appendix "Experiments behind chapter 11"."""
    record = IMDB_SENTENCES_EQUAL.read(path)
    same = record["comparisons"]["served - nbsvm_sentences"]
    whole = record["comparisons"]["served - nbsvm_untaught"]["validation_labelled"]
    tests = record["per_sentence"]["tests"]["0"]["served - nbsvm_sentences"]
    for measure, difference in same.items():
        require(difference["low"] <= 0 <= difference["high"],
                f"NBSVM on the served arm's inputs not told apart from it ({measure})")
    require(whole["low"] > 0, "NBSVM fitted on whole reviews below the served arm")
    texts = sorted(set(record["table"]["nbsvm_sentences"]["texts"].values()))
    return {
        "equal_texts": f"{texts[0]:,} to {texts[-1]:,}",
        "equal_nbsvm_sentences": interval_text(points(same["validation_sentences"])),
        "equal_nbsvm_labelled": interval_text(points(same["validation_labelled"])),
        "equal_nbsvm_whole_labelled": interval_text(points(whole)),
        "equal_p_sentences": f"{tests['validation_sentences']['p_value']:.2f}",
        "equal_p_labelled": f"{tests['validation_labelled']['p_value']:.2f}",
    }


def written_provenance() -> dict[str, str]:
    """The written reviews' and pairs' provenance, as the Record says it (`ORDER_PAIRS`)."""
    return dict(ORDER_PAIRS.provenance)
