"""Chapter 13's comparison of three pretraining objectives on equal terms, read from
`book/results/pretrain_objectives_cpu.json` (written by `tools/records/ch13_objectives.py`)
and laid out as the table and the readings the section "Three objectives on equal terms"
quotes.

Written by hand, not exported. Like `scratchbook.records.pretraining`, it recomputes
what the prose reads (every gain and difference, from the tested runs) and refuses a
record that no longer says it. It does not handle records of other shapes, nor fewer
than two seeds an arm (no interval).
"""

from __future__ import annotations

from pathlib import Path
from statistics import fmean

from IPython.display import Markdown

from scratchformer.measure.statistics import paired_difference
from scratchbook.pages import chinese_spacing, escaped_table
from scratchbook.records import PRETRAIN_OBJECTIVES_CPU
from scratchbook.records.pretraining import Shown, _check, gain_text

NAMES = {"scratch": "none (from scratch)", "mlm": "masked LM", "electra": "ELECTRA",
         "next-token": "next token"}
PROSE = {"mlm": "the masked language model", "electra": "ELECTRA",
          "next-token": "next-token prediction"}
PROSE_ZH = {"mlm": "掩蔽语言模型", "electra": "ELECTRA", "next-token": "下一词元预测"}
EQUAL_MINUTES = 1.10  # one objective's mean minutes at most 10% above another's


def _verdict(difference: dict) -> str:
    return ("pays" if difference["low"] > 0 else "costs" if difference["high"] < 0
            else "no clear difference")


def objectives_table(results: Path, brief: bool = False) -> Shown:
    """One row an arm: minutes and steps of pretraining, the learning rate chosen on
    validation, test accuracy (mean of the seeds) and the gain over the same encoder from
    scratch, seed by seed, with its 95% interval and what it says (`brief`: minutes, test
    accuracy and the gain only); and the reading, checked.

    Described in chapter 13, "Three objectives on equal terms", and the appendix
    "Experiments behind chapter 13"."""
    record = PRETRAIN_OBJECTIVES_CPU.read(results)
    objectives = [arm for arm in NAMES if arm != "scratch"]

    def points(arm: str) -> list[float]:
        return [100 * run["test_accuracy"] for run in record["tested"][arm]]

    gains = {o: paired_difference(points(o), points("scratch")) for o in objectives}
    for objective, gain in gains.items():
        _check(abs(gain["mean"] - record["gain_over_scratch_points"][objective]["mean"])
               < 1e-9, f"{objective}'s gain is the record's")
    minutes = [run["minutes"] for o in objectives
               for run in record["pretraining"][o].values()]
    mean_minutes = {o: fmean(run["minutes"] for run in record["pretraining"][o].values())
                    for o in objectives}
    _check(max(mean_minutes.values()) / min(mean_minutes.values()) <= EQUAL_MINUTES,
           "the objectives' mean pretraining minutes are equal within 10%")
    rows = []
    for arm in NAMES:
        runs = list(record["pretraining"].get(arm, {}).values())
        chosen = next(r for r in record["selection"][arm] if r["lr"] == record["chosen_lr"][arm])
        pretraining = ((f"{fmean(run['minutes'] for run in runs):.1f}",
                        f"{runs[0]['steps']:,}") if runs else ("0", "0"))
        rows.append([NAMES[arm], *pretraining, f"{record['chosen_lr'][arm]:g}",
                     f"{100 * chosen['validation_accuracy']:.2f}",
                     f"{fmean(points(arm)):.2f}",
                     gain_text(gains[arm]) if arm in gains else "",
                     _verdict(gains[arm]) if arm in gains else ""])
    between = {pair: paired_difference(*(points(arm) for arm in pair))
               for pair in [(a, b) for i, a in enumerate(objectives)
                            for b in objectives[i + 1:]]}
    count = len(record["seeds"])
    seeds = ("two", "three", "four", "five")[count - 2] if 2 <= count <= 5 else f"{count}"
    _check(all(gain["low"] <= 0 for gain in gains.values())
           and all(d["low"] <= 0 <= d["high"] for d in between.values()),
           "at this budget no objective pays, and no two are told apart")
    costing = [PROSE[o] for o in objectives if gains[o]["high"] < 0]
    reading = ("No objective gains over the same encoder from scratch with an interval above "
               "zero" + (", and " + " and ".join(costing)
                         + (" loses" if len(costing) == 1 else " lose") if costing else "")
               + ". Between objectives, no difference's interval leaves out zero: at this "
               f"budget, {seeds} seeds cannot tell the objectives apart.")
    costing_zh = [PROSE_ZH[o] for o in objectives if gains[o]["high"] < 0]
    seeds_zh = ("两", "三", "四", "五")[count - 2] if 2 <= count <= 5 else f"{count}"
    reading_zh = chinese_spacing(
        "没有哪个目标以高于零的区间胜过从零训练的同一个编码器"
        + ("，而且" + "和".join(costing_zh) + "还更差" if costing_zh else "")
        + f"。目标之间，没有哪个差的区间排除了零：在这个预算下，{seeds_zh}个种子分不出这些目标的高下。")
    at_edge = [arm for arm in NAMES if record["chosen_lr"][arm] in (
        min(r["lr"] for r in record["selection"][arm]),
        max(r["lr"] for r in record["selection"][arm]))]
    text = {"objective_rates_at_edge": f"{len(at_edge)} of the {len(NAMES)}",
            "objective_rates_at_edge_zh": f"{len(NAMES)} 个对比组中有 {len(at_edge)} 个",
            "objective_minutes": ", ".join(f"{m:.1f}" for m in mean_minutes.values()),
            "objective_run_minutes": f"{min(minutes):.1f} to {max(minutes):.1f}",
            **{f"objective_gain_{o.replace('-', '_')}": gain_text(g)
               for o, g in gains.items()},
            **{f"objective_steps_{o.replace('-', '_')}":
               f"{next(iter(record['pretraining'][o].values()))['steps']:,}"
               for o in objectives}}
    header = ["pretrained with", "minutes", "steps", "lr", "validation % (seed 0)",
              "test % (mean)", "gain (points, 95% interval)", "verdict"]
    if brief:
        kept = [0, 1, 5, 6]
        header, rows = [header[i] for i in kept], [[row[i] for i in kept] for row in rows]
    return Shown(escaped_table(header, rows), text, {"objectives_reading": reading,
                                                     "objectives_reading_zh": reading_zh})


def objective_commands(results: Path) -> list[str]:
    """The commands of seed 0's three pretraining runs, of the first learning rate tried,
    of seed 1's tested run (the others differ in their arm, snapshot, seed and rate; seed
    0's is its chosen run, copied and tested with `--resume`) and of the script that
    gathered them.

    Described in the appendix "Experiments behind chapter 13", "Three objectives on equal
    terms"."""
    record = PRETRAIN_OBJECTIVES_CPU.read(results)
    seed = str(record["seeds"][0])
    return [record["pretraining"][o][seed]["command"] for o in NAMES if o != "scratch"] + [
        record["selection"]["mlm"][0]["command"], record["tested"]["mlm"][1]["command"],
        record["command"]]


def objective_runs(results: Path) -> Markdown:
    """Every fine-tuning run of the comparison: validation accuracy at each learning rate
    tried (seed 0), the rate chosen, and test accuracy seed by seed at that rate.

    Described in the appendix "Experiments behind chapter 13", "Three objectives on equal
    terms"."""
    record = PRETRAIN_OBJECTIVES_CPU.read(results)
    rates = sorted({run["lr"] for runs in record["selection"].values() for run in runs})
    rows = [[NAMES[arm], *(next((f"{100 * r['validation_accuracy']:.2f}"
                                 for r in record["selection"][arm] if r["lr"] == lr), "")
                           for lr in rates),
             f"{record['chosen_lr'][arm]:g}",
             *(f"{100 * run['test_accuracy']:.2f}" for run in record["tested"][arm])]
            for arm in NAMES]
    return escaped_table(["pretrained with", *(f"validation %, lr {lr:g}" for lr in rates),
                          "lr chosen", *(f"test %, seed {s}" for s in record["seeds"])],
                         rows)
