"""Chapter 11's gap to counting at equal input: the record `book/results/imdb_gap.json` (written
by `tools/records/ch11_gap.py`) read, its shape checked, and laid out as the page's table.

Written by hand, not exported. The record holds, for each input (the 254 and 510 GPT-2 tokens the
Transformer reads, head+tail, and the whole review), the test accuracy of bag-of-words logistic
regression and of NBSVM fitted on exactly that input, and the Transformer's recorded test
accuracy (the mean of its seeds) where it read that input. It does not handle records of other
inputs or models than these, and does not recompute anything: the gaps are the record's.
"""

from __future__ import annotations

from pathlib import Path

from IPython.display import Markdown

from scratchformer.measure.statistics import interval_text, paired_difference
from scratchbook.pages import markdown_table
from scratchbook.records import GAP_INPUTS, GAP_TRANSFORMER_INPUTS, IMDB_GAP

INPUTS = GAP_INPUTS  # the table's rows, in order
TRANSFORMER_INPUTS = GAP_TRANSFORMER_INPUTS  # no Transformer reads whole reviews
MODELS = ("bag_of_words", "nbsvm")


def read_gap_record(path: Path | None = None) -> dict:
    """The gap record (by default the book's), with every accuracy and gap the page reads
    checked present and numeric (`IMDB_GAP`); a RecordError naming the file and the field
    otherwise."""
    return IMDB_GAP.read(path)


def gap_table(path: Path | None = None) -> Markdown:
    """The page's table: a row per input (254 tokens, 510 tokens, the whole review), the test
    accuracy of bag of words, NBSVM and the Transformer (mean of its seeds) on it, and the
    Transformer less bag of words in points. Reads the record at `path` (by default the
    repository's) with `read_gap_record`."""
    record = read_gap_record(path)
    seeds = len(record["transformer"]["inputs"][TRANSFORMER_INPUTS[0]]["test_accuracy"])
    rows = []
    for name in INPUTS:
        counting = record["counting"][name]
        cells: list[object] = [name, *(f"{100 * counting[m]['accuracy']:.2f}%" for m in MODELS)]
        if name in TRANSFORMER_INPUTS:
            transformer = record["transformer"]["inputs"][name]["mean"]
            gap = record["gaps"][name]["transformer_minus_bag_of_words"]
            cells += [f"{100 * transformer:.2f}%", f"{100 * gap:+.2f}"]
        else:
            cells += ["not run", ""]
        rows.append(cells)
    return markdown_table(["input", "bag of words", "NBSVM",
                           f"the Transformer (mean of {seeds} seeds)",
                           "Transformer minus bag of words, points"], rows)


def _behind(record: dict, name: str, model: str) -> dict:
    """The Transformer's seeds less a counting model on the same input, in points, with the
    95% interval over seeds (a counting model's fit has no seed)."""
    seeds = record["transformer"]["inputs"][name]["test_accuracy"].values()
    baseline = 100 * record["counting"][name][model]["accuracy"]
    return paired_difference([100 * s for s in seeds], [baseline] * len(seeds))


def gap_figures(path: Path | None = None) -> dict[str, str]:
    """The numbers chapter 11's prose quotes from the record, as text, keyed by glue name.

    Refuses (ValueError) a record that no longer supports what the prose says: cutting costs
    counting less at 510 tokens than at 254 and at most a point; at equal input the Transformer
    is behind both counting models (its interval below zero), by more than twice what the cut
    costs at 510; the attention-free model is behind bag of words on the same text.

    Described in the appendix "Experiments behind chapter 11", "Where the gap is, at equal
    input"."""
    record = read_gap_record(path)
    source = IMDB_GAP.locate(path)
    counting, gaps = record["counting"], record["gaps"]
    tested = counting["whole review"]["bag_of_words"]["examples"]
    figures = {"gap_train_reviews": f"{record['data']['splits']['train']['reviews']:,}",
               "gap_test_reviews": f"{tested:,}",
               "gap_no_attention_below_bag":
                   f"{-100 * gaps['254 tokens']['no_attention_minus_bag_of_words']:.2f}"}
    for name, key in (("254 tokens", "254"), ("510 tokens", "510")):
        figures[f"gap_cut_{key}"] = f"{counting[name]['reviews_cut']['test'] / tested:.0%}"
        for model, short in (("bag_of_words", "bag"), ("nbsvm", "nbsvm")):
            figures[f"gap_{short}_cost_{key}"] = \
                f"{100 * gaps[name][f'truncation_cost_{model}']:.2f}"
            figures[f"gap_{short}_behind_{key}"] = interval_text(_behind(record, name, model))
    preset_mean = record["transformer"]["inputs"]["254 tokens"]["mean"]
    for model, short in (("bag_of_words", "bag"), ("nbsvm", "nbsvm")):
        whole_gap = counting["whole review"][model]["accuracy"] - preset_mean
        cost_254 = gaps["254 tokens"][f"truncation_cost_{model}"]
        cost_510 = gaps["510 tokens"][f"truncation_cost_{model}"]
        figures[f"gap_{short}_whole_254"] = f"{100 * whole_gap:.2f}"
        figures[f"gap_{short}_truncation_share"] = f"{cost_254 / whole_gap:.0%}"
        claims = [cost_254 > cost_510 >= 0, cost_254 < 0.0105, 0 < cost_254 / whole_gap < 1,
                  -gaps["510 tokens"][f"transformer_minus_{model}"] > 2 * cost_510,
                  *(_behind(record, name, model)["high"] < 0 for name in TRANSFORMER_INPUTS)]
        if not all(claims):
            raise ValueError(f"{source}: the record no longer supports chapter 11's reading of "
                             f"the gap to {model} (claims held: {claims})")
    if not gaps["254 tokens"]["no_attention_minus_bag_of_words"] < 0:
        raise ValueError(f"{source}: the attention-free model is no longer behind bag of words")
    return figures
