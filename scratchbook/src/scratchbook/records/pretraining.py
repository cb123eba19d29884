"""Chapter 13's recorded results: the pretraining runs, the fine-tuning of their snapshots,
the recipe sweep and the GPT's transfer, read from `book/results/` and laid out as the
tables and figures the chapter's argument needs; and the commands, per-seed tables and
grids behind them, which the appendix "Experiments behind chapter 13" shows.

Written by hand, not exported. Each public function reads the records it needs, checks
that they still say what the chapter's prose reads in them (a `ValueError` naming the
reading that no longer holds), and returns a `Shown`: the table or figure, and the values
the prose quotes, which the page glues with `glue_numbers`. Drawing needs matplotlib (the
book's requirements). It does not handle records of other shapes than the scripts in
`tools/records/ch13_*.py` write, nor runs other than the ones the chapter describes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any

from IPython.display import Markdown

from scratchformer.measure.statistics import paired_difference
from scratchbook.pages import NUMBERS_ONLY, chinese_numbers, escaped_table, glue_md
from scratchbook.records import (GPT_CPU, GPT_NGRAMS, IMDB_BASELINES, IMDB_CPU,
                                 IMDB_TAUGHT_BLOCKS, PRETRAIN_CPU,
                                 PRETRAIN_ELECTRA_LOSSES_CPU, PRETRAIN_OBJECTIVES_CPU,
                                 PRETRAIN_SWEEP_CPU, PRETRAINING_THROUGHPUT, TRANSFER_CPU,
                                 record)
from scratchformer.runs.hardware import busy_note, recorded_load


@dataclass
class Shown:
    """What a cell shows (a Markdown `table`, when there is one) and the values the prose
    quotes: `text` is glued as text, `markdown` as Markdown.

    Described in chapter 13, "The recorded runs"."""

    table: Markdown | None = None
    text: dict[str, object] = field(default_factory=dict)
    markdown: dict[str, str] = field(default_factory=dict)


def glue_numbers(*shown: Shown) -> None:
    """Glue every value of each `shown` for the prose; and, for the Chinese edition, each value
    of numbers alone as a Chinese sentence writes it (`chinese_numbers`: "22500", "-0.16 到
    +1.20") under `<name>_zh`, unless the `shown` words it itself.

    Described in chapter 13, "The recorded runs"."""
    from myst_nb import glue

    for one in shown:
        for name, text in one.text.items():
            glue(name, text, display=False)
            if NUMBERS_ONLY.fullmatch(str(text)) and f"{name}_zh" not in one.text:
                glue(f"{name}_zh", chinese_numbers(str(text)), display=False)
        for name, text in one.markdown.items():
            glue_md(name, text)


def gain_text(gain: dict) -> str:
    """A paired difference as the pages quote it: `+0.52 (-0.16 to +1.20)`.

    Described in the appendix "Experiments behind chapter 13"."""
    return f"{gain['mean']:+.2f} ({gain['low']:+.2f} to {gain['high']:+.2f})"


def _check(holds: bool, reading: str) -> None:
    """Refuse a record that no longer supports what the prose reads in it."""
    if not holds:
        raise ValueError(f"the recorded results no longer support the chapter's reading: "
                         f"{reading}; rewrite the prose before the page")


def mean_sd(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value).

    Described in the appendix "Experiments behind chapter 13", "When pretraining pays: fine-tuning
    the snapshots"."""
    mean = sum(values) / len(values)
    if len(values) == 1:
        return mean, 0.0
    return mean, (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5


def question_table(results: Path) -> Shown:
    """Chapter 11's counting baselines and two of its Transformers on the test split: the
    `cpu` preset's run, which learned from its labelled reviews alone, and the model taught
    by NBSVM's verdicts on the unlabelled reviews (five seeds, validation in blocks).

    Refuses a record that no longer says what the prose reads: the run from labels alone
    below bag of words, the taught model's interval above bag of words and below NBSVM.

    Described in chapter 13, "The question"."""
    from_scratch_run = IMDB_CPU.read(results)
    baselines = IMDB_BASELINES.read(results)
    taught_record = IMDB_TAUGHT_BLOCKS.read(results)
    taught = taught_record["taught"]["nbsvm"]
    counts = {run["unlabelled"] for run in taught_record["runs"]["nbsvm"].values()}
    _check(len(counts) == 1, "every taught run learned from the same unlabelled reviews")
    unlabelled = f"{counts.pop():,}"
    by_name = {row["model"]: row["accuracy"] for row in baselines["test"]}
    bag = next(a for name, a in by_name.items() if name.startswith("bag of words"))
    nbsvm = next(a for name, a in by_name.items() if name.startswith("NBSVM"))
    scratch = from_scratch_run["test"]["accuracy"]
    fit_reviews = (from_scratch_run["data"]["splits"]["train"]["reviews"]
                   - from_scratch_run["data"]["validation_reviews"])
    seeds = taught["per_seed"]
    over_bag = paired_difference([100 * a for a in seeds], [100 * bag] * len(seeds))
    _check(scratch < bag, "the Transformer from labels alone is below bag of words")
    _check(over_bag["low"] > 0 and 100 * taught["interval_95"][1] < 100 * nbsvm,
           "the taught Transformer is above bag of words and below NBSVM")
    rows = [[name, f"{accuracy:.2%}"] for name, accuracy in by_name.items()]
    rows.append([f"Transformer, {fit_reviews:,} labelled reviews (chapter 11's cpu run)",
                 f"{scratch:.2%}"])
    rows.append([f"Transformer also taught by NBSVM on {unlabelled} unlabelled reviews "
                 f"({len(seeds)} seeds)", f"{taught['mean']:.2%}"])
    return Shown(escaped_table(["model", "test accuracy"], rows), {
        "scratch_accuracy": f"{scratch:.2%}", "nbsvm_accuracy": f"{nbsvm:.2%}",
        "bag_accuracy": f"{bag:.2%}", "taught_accuracy": f"{taught['mean']:.2%}",
        "taught_unlabelled": unlabelled,
        "fit_reviews": f"{fit_reviews:,}", "taught_seeds": str(len(seeds)),
        "taught_over_bag": gain_text(over_bag)})


def _context_free(recorded: dict) -> tuple[dict[str, float], float]:
    """The best loss without context at each kind of chosen position (see "What the model
    learned"), and at the 80/10/10 mix of them: the frequencies at [MASK]; a token in view
    is the original half the time."""
    frequencies_alone = recorded["loss_by_position"]["frequencies alone"]
    context_free = {"[MASK]": frequencies_alone["[MASK]"], "own token": math.log(2),
                    "random token": frequencies_alone["random token"] + math.log(2)}
    mixture_floor = (0.8 * context_free["[MASK]"] + 0.1 * context_free["own token"]
                     + 0.1 * context_free["random token"])
    return context_free, mixture_floor


def recorded_runs(results: Path) -> Shown:
    """The two recorded pretraining runs (masked LM and ELECTRA): size, steps, tokens,
    minutes, final validation loss; and how the masked LM's loss ends against the best
    loss without context.

    Described in the appendix "Experiments behind chapter 13", "The recorded pretraining runs"."""
    recorded = PRETRAIN_CPU.read(results)
    runs = recorded["pretraining"]
    rows: list[list[object]] = []
    text: dict[str, object] = {}
    for objective, run in runs.items():
        last = run["history"][-1]
        tokens = last["windows_seen"] * run["settings"]["window"]
        loss = ("masked LM" if objective == "mlm" else
                f"generator + {run['settings']['rtd_weight']:g} x discriminator")
        rows.append([objective, f"{run['encoder_parameters']:,}", f"{last['step']:,}",
                     f"{tokens / 1e6:.1f} M", f"{last['seconds'] / 60:.1f}", loss,
                     f"{last['val_loss']:.3f}"])
        text[f"{objective}_steps"] = f"{last['step']:,}"
        text[f"{objective}_minutes"] = f"{last['seconds'] / 60:.0f}"
        text[f"{objective}_tokens"] = f"{tokens / 1e6:.0f} million"
        text[f"{objective}_val_loss"] = f"{last['val_loss']:.3f}"
    _, mixture_floor = _context_free(recorded)
    mlm_run = runs["mlm"]
    stream_tokens = mlm_run["data"]["training_tokens"]
    final_loss = mlm_run["history"][-1]["val_loss"]
    text.update({
        "mixture_floor": f"{mixture_floor:.2f}",
        "stream_tokens": f"{stream_tokens / 1e6:.1f} million",
        "stream_tokens_zh": f"{round(stream_tokens / 1e5) * 10} 万",
        "mlm_passes": f"{mlm_run['history'][-1]['windows_seen'] * 256 / stream_tokens:.1f}",
        "mlm_final_loss": f"{final_loss:.2f}",
        "mixture_gap": f"{mixture_floor - final_loss:.2f}",
    })
    _check(0 < mixture_floor - final_loss < 0.2,
           "the masked LM ends just under the context-free mark, not far below it")
    text["rtd_weight"] = f"{runs['electra']['settings']['rtd_weight']:g}"
    return Shown(escaped_table(["objective", "encoder parameters", "steps", "tokens read",
                                 "minutes", "loss", "validation loss"], rows), text)


CHAPTER_13_RECORDS = {
    "pretrain_cpu.json": "the two pretraining runs, every fine-tuning of their "
                         "snapshots, the loss by position and the predictions",
    "pretrain_electra_losses_cpu.json": "ELECTRA's generator and discriminator losses at "
                                        "each snapshot of a rerun",
    "pretraining_throughput.json": "tokens per second of both objectives",
    "pretrain_sweep_cpu.json": "the recipe sweep",
    "transfer_cpu.json": "the GPT's pretraining, its learning-rate choice and its "
                         "fine-tuning",
    "pretrain_objectives_cpu.json": "three objectives on equal terms: their pretraining, "
                                    "learning-rate choice and fine-tuning",
    "imdb_baselines.json": "chapter 11's counting models",
    "imdb_cpu.json": "chapter 11's run from labels alone",
    "imdb_taught_blocks.json": "chapter 11's models taught by NBSVM",
    "gpt_cpu.json": "chapter 12's GPT run, with its held-out bigram",
    "gpt_ngrams.json": "chapter 12's counting models of each GPT run's stream",
}


def record_commands(results: Path) -> Markdown:
    """Each record chapter 13 and its appendix read, what it holds and the command that
    made it.

    Described in the appendix "Experiments behind chapter 13"."""
    return escaped_table(["record: what it holds", "made by"],
                         [[f"{name}: {holds}", record(name).read(results)["command"]]
                          for name, holds in CHAPTER_13_RECORDS.items()])


def experiment_commands(results: Path) -> dict[str, list[str]]:
    """The commands behind each experiment of chapter 13's encoders and GPT, as a reader
    types them, by experiment: `pretraining` (the masked LM's and ELECTRA's runs),
    `fine-tuning` (the first run; the others differ in `--init`, the seed and `--epochs`),
    `electra parts` (ELECTRA's rerun that kept its snapshots, and the script that measured
    them), `sweep` (its four runs and the script), `transfer` (the GPT's two pretraining
    runs, the first two fine-tuning runs and the script).

    Described in the appendix "Experiments behind chapter 13"."""
    recorded = PRETRAIN_CPU.read(results)
    sweep = PRETRAIN_SWEEP_CPU.read(results)
    parts = PRETRAIN_ELECTRA_LOSSES_CPU.read(results)
    transfer = TRANSFER_CPU.read(results)
    return {
        "pretraining": [run["command"] for run in recorded["pretraining"].values()],
        "fine-tuning": [recorded["fine_tuning"][0]["command"], recorded["command"]],
        "electra parts": [parts["run"]["command"], parts["command"]],
        "sweep": [run["command"] for run in sorted(
            sweep["runs"].values(), key=lambda r: r["model_config"]["d_model"])]
                 + [sweep["command"]],
        "transfer": [r["command"] for r in transfer["pretraining"].values()]
                    + [r["command"] for r in transfer["fine_tuning"][:2]]
                    + [transfer["command"]],
    }


def fine_tuning_runs(results: Path) -> Markdown:
    """Every fine-tuning run of chapter 13's encoders, seed by seed: its arm, seed,
    validation and test accuracy and minutes.

    Described in the appendix "Experiments behind chapter 13"."""
    recorded = PRETRAIN_CPU.read(results)
    names = {s["arm"]: s["name"] for s in _arms(recorded)}
    runs = sorted(recorded["fine_tuning"], key=lambda r: (list(names).index(r["arm"]),
                                                          r["seed"]))
    return escaped_table(
        ["encoder", "seed", "validation accuracy", "test accuracy", "minutes"],
        [[names[r["arm"]], r["seed"], f"{r['validation_accuracy']:.2%}",
          f"{r['test_accuracy']:.2%}", f"{r['seconds']['total'] / 60:.1f}"]
         for r in runs])


def _draw_electra(history: list[dict], mixture_floor: float, parts_minutes: list[float],
                  parts: list[dict]) -> None:
    """The three panels of `electra_losses`: the masked LM's validation `history`, and
    ELECTRA's generator and discriminator losses at its snapshots (`parts`)."""
    import matplotlib.pyplot as plt

    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(8.4, 3.1))
    left.plot([r["seconds"] / 60 for r in history], [r["val_loss"] for r in history], "o-")
    left.axhline(mixture_floor, color="gray", linestyle="--")
    middle.plot(parts_minutes, [p["generator"] for p in parts], "o-", color="C1")
    middle.axhline(mixture_floor, color="gray", linestyle="--")  # the same windows, masks
    right.plot(parts_minutes, [p["replaced_token"] for p in parts], "o-", color="C1")
    right.plot(parts_minutes, [p["always_the_share"] for p in parts], color="gray",
               linestyle="--")  # the share replaced falls as the generator improves
    for axis, title in ((left, "MLM"), (middle, "ELECTRA generator"),
                        (right, "ELECTRA discriminator")):
        axis.set_title(title, fontsize=10)
        axis.set_xlabel("minutes of pretraining")
        axis.grid(alpha=0.3)
    left.set_ylabel("held-out loss (nats)")
    fig.tight_layout()
    plt.show()


def electra_losses(results: Path, draw: bool = True) -> Shown:
    """Three panels of held-out loss against minutes: the masked LM, ELECTRA's generator
    and its discriminator, each with the line a model without context reaches; the values
    the prose quotes of ELECTRA's last snapshot.

    Described in the appendix "Experiments behind chapter 13", "ELECTRA's two losses"."""
    recorded = PRETRAIN_CPU.read(results)
    runs = recorded["pretraining"]
    frequencies_alone = recorded["loss_by_position"]["frequencies alone"]
    _, mixture_floor = _context_free(recorded)
    electra_parts = PRETRAIN_ELECTRA_LOSSES_CPU.read(results)
    # The snapshots come from a rerun of the recorded ELECTRA command with snapshots kept;
    # it trained the same model: the same validation loss at every step the record holds.
    rerun = {r["step"]: r["val_loss"] for r in electra_parts["run"]["history"]}
    _check(all(rerun[r["step"]] == r["val_loss"] for r in runs["electra"]["history"]),
           "the rerun of ELECTRA reproduces every validation loss of the record")
    trained = [step for step in electra_parts["snapshots"] if int(step) > 0]  # as MLM's
    recorded_seconds = {r["step"]: r["seconds"] for r in runs["electra"]["history"]}
    parts_minutes = [recorded_seconds[int(step)] / 60 for step in trained]  # record's clock
    parts = [electra_parts["snapshots"][step] for step in trained]
    if draw:
        _draw_electra(runs["mlm"]["history"], mixture_floor, parts_minutes, parts)
    last_parts = parts[-1]
    # The generator is judged on the masked-LM run's held-out windows and masks: token
    # frequencies there score the same mix as in the masked LM's record.
    frequencies_mix = sum(share * frequencies_alone[kind] for share, kind in (
        (0.8, "[MASK]"), (0.1, "own token"), (0.1, "random token")))
    _check(abs(electra_parts["frequencies_at_chosen"] - frequencies_mix) < 0.01,
           "the generator is judged on the masked LM's windows and masks")
    rtd_margin = last_parts["always_the_share"] - last_parts["replaced_token"]
    weight = runs["electra"]["settings"]["rtd_weight"]
    parts_sum = last_parts["generator"] + weight * last_parts["replaced_token"]
    # The parts are measured on the masked LM's held-out windows and masks, the record's
    # loss on ELECTRA's own: the same sum, on other windows, so close but not equal.
    _check(abs(parts_sum - runs["electra"]["history"][-1]["val_loss"]) < 0.5,
           "ELECTRA's validation loss is its generator's loss plus "
           f"{weight:g} times its discriminator's")
    _check(last_parts["generator"] > mixture_floor,
           "the generator ends above the best loss without context")
    verdict, verdict_zh = (
        ("learned to spot replacements", "学会了识别替换") if rtd_margin > 0.05 else
        ("barely did better than always answering the share of replaced tokens",
         "只比始终回答被替换词元的比例好一点点") if rtd_margin > 0.001 else
        ("did no better than always answering the share of replaced tokens",
         "并不比始终回答被替换词元的比例更好"))
    return Shown(text={"electra_generator_last": f"{last_parts['generator']:.2f}",
                       "electra_rtd_last": f"{last_parts['replaced_token']:.3f}",
                       "electra_rtd_floor": f"{last_parts['always_the_share']:.3f}",
                       "electra_replaced_share": f"{last_parts['replaced_share']:.1%}",
                       "electra_rtd_margin": f"{rtd_margin:.3f}",
                       "electra_parts_sum": f"{parts_sum:.1f}"},
                 markdown={"electra_rtd_verdict": verdict, "electra_rtd_verdict_zh": verdict_zh})


def throughput(results: Path) -> Shown:
    """Tokens per second of both objectives at windows of 128 and 256 tokens
    (`benchmarks/pretraining.py`), its command and the machine's load printed.

    Described in the appendix "Experiments behind chapter 13", "The recorded pretraining
    runs" (the table in its last section, "How chapter 13's numbers were made")."""
    record = PRETRAINING_THROUGHPUT.read(results)
    print(record["command"] + busy_note(record))
    speed = {(r["objective"], r["window"]): r["speed_vs_mlm_256"] for r in record["rows"]}
    return Shown(
        escaped_table(["objective", "window", "tokens per second",
                        "speed vs masked LM, 256"],
                       [[r["objective"], r["window"], f"{r['tokens_per_second']:,.0f}",
                         f"{r['speed_vs_mlm_256']:.2f}x"] for r in record["rows"]]),
        {"electra_step_cost": f"{1 / speed[('electra', 256)]:.1f}",
         "short_window_speedup": f"{speed[('mlm', 128)]:.2f}"})


def _arms(recorded: dict) -> list[dict]:
    """One summary per fine-tuning arm (a snapshot, fine-tuned with several seeds): its
    name, pretraining and fine-tuning minutes, and test and validation mean and sd."""
    runs = recorded["pretraining"]
    arms: dict[str, list[dict]] = {}
    for run in recorded["fine_tuning"]:
        arms.setdefault(run["arm"], []).append(run)
    snapshot_minutes = {objective: {int(step): seconds / 60 for step, seconds
                                    in run["snapshot_seconds"].items()}
                        for objective, run in runs.items()}
    summary = []
    for arm, members in arms.items():
        first = members[0]
        pretrain_minutes = snapshot_minutes[first["objective"]][first["snapshot_step"]]
        test = mean_sd([m["test_accuracy"] for m in members])
        val = mean_sd([m["validation_accuracy"] for m in members])
        finetune_minutes = sum(m["seconds"]["total"] for m in members) / len(members) / 60
        name = ("from scratch" if first["snapshot_step"] == 0 else
                f"{'MLM' if first['objective'] == 'mlm' else 'ELECTRA'}, "
                f"{first['snapshot_step']:,} steps")
        if first["epochs"] > 1:
            name += f", {first['epochs']} epochs"
        name_zh = ("从零训练" if first["snapshot_step"] == 0 else
                   f"{'MLM' if first['objective'] == 'mlm' else 'ELECTRA'}，"
                   f"{first['snapshot_step']} 步") + (
            f"，{first['epochs']} 轮" if first["epochs"] > 1 else "")
        summary.append({"arm": arm, "name": name, "name_zh": name_zh,
                        "objective": first["objective"],
                        "step": first["snapshot_step"], "epochs": first["epochs"],
                        "pretrain_minutes": pretrain_minutes,
                        "finetune_minutes": finetune_minutes,
                        "seeds": len(members), "test": test, "val": val})
    summary.sort(key=lambda s: (s["objective"] != "mlm", s["epochs"], s["step"]))
    return summary


def _shown(accuracy: tuple[float, float], seeds: int) -> str:
    """Mean ± standard deviation over the seeds, or the one value."""
    mean, sd = accuracy
    return f"{mean:.2%} ± {sd:.2%}" if seeds > 1 else f"{mean:.2%}"


def fine_tuning_arms(results: Path) -> Shown:
    """Every snapshot fine-tuned (three seeds each) and the longer run from scratch:
    pretraining and fine-tuning minutes, validation and test accuracy.

    Described in the appendix "Experiments behind chapter 13", "When pretraining pays: fine-tuning
    the snapshots"."""
    recorded = PRETRAIN_CPU.read(results)
    summary = _arms(recorded)
    loads = [recorded_load(run) for run in recorded["fine_tuning"]]
    highest = max(max(load["start"], load["end"]) for load in loads)
    note = "" if not any(load["busy"] for load in loads) else (
        f"These runs were timed two at a time on the two cores (one-minute load up to "
        f"{highest:.1f}): measured on a busy machine, their minutes compare with one "
        "another, not with the quiet runs of other chapters.")
    note_zh = "" if not note else (
        f"这些运行在两个核心上两个一组地计时（一分钟平均负载最高为 {highest:.1f}）：它们是在繁忙"
        "的机器上测得的，其分钟数只能彼此比较，不能与其他章节在空闲的机器上的运行比较。")
    return Shown(escaped_table(
        ["encoder", "pretraining minutes", "fine-tuning minutes", "seeds",
         "validation accuracy", "test accuracy"],
        [[s["name"], f"{s['pretrain_minutes']:.0f}", f"{s['finetune_minutes']:.1f}",
          s["seeds"], _shown(s["val"], s["seeds"]), _shown(s["test"], s["seeds"])]
         for s in summary]), {"timing_note": note, "timing_note_zh": note_zh})


def _compared(recorded: dict) -> dict[str, Any]:
    """The arms the prose compares (from scratch, six epochs, the best on validation, the
    last masked-LM snapshot, ELECTRA, the masked LM at ELECTRA's time) and a function for
    the paired difference of two arms' test accuracies."""
    summary = _arms(recorded)
    by_arm = {s["arm"]: s for s in summary}
    pretrained = [s for s in summary if s["step"] > 0]
    electra = next(s for s in pretrained if s["objective"] == "electra")
    test_by_seed: dict[str, dict[int, float]] = {}
    for run in recorded["fine_tuning"]:
        test_by_seed.setdefault(run["arm"], {})[run["seed"]] = 100 * run["test_accuracy"]

    def paired_arms(a: dict, b: dict) -> dict:
        """Arm `a` minus arm `b`, seed by seed, in points, with its 95% t-interval."""
        seeds = sorted(set(test_by_seed[a["arm"]]) & set(test_by_seed[b["arm"]]))
        return paired_difference([test_by_seed[a["arm"]][s] for s in seeds],
                                 [test_by_seed[b["arm"]][s] for s in seeds])

    return {
        "summary": summary, "paired_arms": paired_arms,
        "scratch": by_arm["mlm0"], "longer": by_arm["scratch_long"],
        "best": max(pretrained, key=lambda s: s["val"][0]),  # on validation, never test
        "mlm_final": max((s for s in pretrained if s["objective"] == "mlm"),
                         key=lambda s: s["step"]),
        "electra": electra,
        "mlm_same_time": min((s for s in pretrained if s["objective"] == "mlm"),
                             key=lambda s: abs(s["pretrain_minutes"]
                                               - electra["pretrain_minutes"])),
    }


def arm_differences(results: Path) -> Shown:
    """The differences between arms that the prose reads, each with the 95% t-interval of
    its seed-by-seed differences.

    Described in the appendix "Experiments behind chapter 13", "When pretraining pays: fine-tuning
    the snapshots"."""
    recorded = PRETRAIN_CPU.read(results)
    arms = _compared(recorded)
    paired_arms = arms["paired_arms"]
    scratch, longer, best = arms["scratch"], arms["longer"], arms["best"]
    electra, mlm_same_time = arms["electra"], arms["mlm_same_time"]

    def points(a: dict, b: dict) -> str:
        return f"{100 * (a['test'][0] - b['test'][0]):+.2f}"

    def interval(a: dict, b: dict) -> str:
        difference = paired_arms(a, b)
        return f"{difference['low']:+.2f} to {difference['high']:+.2f}"

    text: dict[str, object] = {}
    for name in ("scratch", "longer", "best", "mlm_final", "electra", "mlm_same_time"):
        arm = arms[name]
        text[f"{name}_test"] = f"{arm['test'][0]:.2%}"
        text[f"{name}_sd"] = f"{arm['test'][1]:.2%}"
        text[f"{name}_total_minutes"] = f"{arm['pretrain_minutes'] + arm['finetune_minutes']:.0f}"
        text[f"{name}_name"] = arm["name"]
        text[f"{name}_name_zh"] = arm["name_zh"]
    text.update({
        "best_gain": points(best, scratch), "best_interval": interval(best, scratch),
        "electra_vs_mlm": points(electra, mlm_same_time),
        "electra_vs_mlm_interval": interval(electra, mlm_same_time),
        "electra_vs_scratch": points(electra, scratch),
        "electra_vs_scratch_interval": interval(electra, scratch),
        "mlm_final_gain": points(arms["mlm_final"], scratch),
        "mlm_final_interval": interval(arms["mlm_final"], scratch),
        "same_compute_gain": points(mlm_same_time, longer),
    })
    _check(best["arm"] == mlm_same_time["arm"],
           "the arm validation chose is also the masked LM's snapshot at ELECTRA's time")
    _check(longer["seeds"] == 1, "six epochs from scratch ran with one seed (no interval)")
    snapshots = [s for s in arms["summary"] if s["step"] > 0]
    for a, b in ((best, scratch), (electra, mlm_same_time),
                 *((snapshot, scratch) for snapshot in snapshots)):
        difference = paired_arms(a, b)
        _check(difference["low"] <= 0 <= difference["high"],
               f"the 95% interval of {a['name']} against {b['name']} holds zero")
    _check(electra["test"][1] == max(s["test"][1] for s in arms["summary"]),
           "ELECTRA's seeds spread the widest")
    long_run = next(r for r in recorded["fine_tuning"] if r["arm"] == "scratch_long")
    _check(max(long_run["history"], key=lambda r: r["val_accuracy"])["epoch"] < 6,
           "six epochs from scratch peaked on validation before the last epoch")
    return Shown(text=text)


def loss_by_position(results: Path, draw: bool = True) -> Shown:
    """The masked LM's held-out loss at each snapshot, split by what a position shows
    ([MASK], a random token, its own token), each beside the best without context (drawn
    unless not `draw`).

    Described in the appendix "Experiments behind chapter 13", "What the masked model
    learned", and chapter 13, "The recorded runs"."""
    recorded = PRETRAIN_CPU.read(results)
    context_free, _ = _context_free(recorded)
    by_position = recorded["loss_by_position"]
    steps = sorted(int(step) for step in by_position["snapshots"])
    kinds = ["[MASK]", "random token", "own token"]
    if draw:
        import matplotlib.pyplot as plt

        fig, axis = plt.subplots(figsize=(7, 3.4))
        for i, kind in enumerate(kinds):
            axis.plot(steps, [by_position["snapshots"][str(step)][kind] for step in steps],
                      "o-", color=f"C{i}", label=f"positions showing {kind}")
            axis.axhline(context_free[kind], color=f"C{i}", linestyle=":", linewidth=1)
        axis.set_xlabel("pretraining step")
        axis.set_ylabel("loss (nats)")
        axis.set_title("dotted: the best without context", fontsize=10)
        axis.legend(fontsize=10)
        axis.grid(alpha=0.3)
        fig.tight_layout()
        plt.show()
    last_step = str(steps[-1])
    # What each kind of position gave to the drop of the loss after the first trained
    # snapshot, weighted by its share of the chosen positions (80/10/10).
    first, last = (by_position["snapshots"][str(step)] for step in (steps[1], steps[-1]))
    shares = {"[MASK]": 0.8, "random token": 0.1, "own token": 0.1}
    drops = {kind: share * (first[kind] - last[kind]) for kind, share in shares.items()}
    own_share = drops["own token"] / sum(drops.values())
    _check(own_share > 0.7, "after the first snapshot, the drop is mostly the bet on the "
           "token in view")
    at_mask = by_position["snapshots"][last_step]["[MASK]"]
    frequencies_at_mask = by_position["frequencies alone"]["[MASK]"]
    _check(0 <= frequencies_at_mask - at_mask < 0.2,
           "almost nothing is learned from context at [MASK] positions")
    return Shown(text={
        "loss_at_mask": f"{at_mask:.2f}", "frequencies_at_mask": f"{frequencies_at_mask:.2f}",
        "loss_at_own": f"{by_position['snapshots'][last_step]['own token']:.2f}",
        "mask_gain": f"{frequencies_at_mask - at_mask:.2f}",
        "own_share_of_drop": f"{own_share:.0%}", "first_snapshot": f"{steps[1]:,}",
        "recorded_gain_last": f"{frequencies_at_mask - at_mask:.2f}"})


def predictions_table(results: Path) -> Shown:
    """The five likeliest tokens at a hidden word of a few sentences, untrained and after
    the recorded masked-LM run; who wrote the sentences and when; and what the table shows,
    checked: untrained, the token in view (`[MASK]`) first and every probability near
    1/V; after pretraining, one token first at every blank and a handful of tokens in all.

    Described in the appendix "Experiments behind chapter 13", "What the masked model
    learned"."""
    predictions = PRETRAIN_CPU.read(results)["predictions"]
    rows = []

    def top(entry: dict) -> str:
        return ", ".join(f"{t['token'].strip() or repr(t['token'])} "
                         f"({t['probability']:.2f})" for t in entry["top"])

    for before, after in zip(predictions["before"], predictions["after"]):
        rows.append([before["sentence"], top(before), top(after)])
    after_step = f"after {predictions['after_step']:,} steps"
    untrained_first = {entry["top"][0]["token"] for entry in predictions["before"]}
    untrained_highest = max(t["probability"] for entry in predictions["before"]
                            for t in entry["top"])
    after_first = {entry["top"][0]["token"] for entry in predictions["after"]}
    after_tokens = {t["token"] for entry in predictions["after"] for t in entry["top"]}
    slots = sum(len(entry["top"]) for entry in predictions["after"])
    _check(untrained_first == {"[MASK]"} and untrained_highest < 0.001,
           "untrained, every sentence's likeliest token is [MASK], every probability "
           "under 0.001")
    _check(len(after_first) == 1 and len(after_tokens) <= slots // 2,
           "after pretraining, one token leads at every blank and a few tokens fill the "
           "table")
    made = predictions["sentences"]
    return Shown(escaped_table(["sentence", "untrained", after_step], rows), {
        "predictions_sentences": str(len(rows)),
        "predictions_untrained_highest": f"{untrained_highest:.4f}",
        "predictions_first_after": repr(after_first.pop().strip() or "?"),
        "predictions_distinct": str(len(after_tokens)),
        "predictions_slots": str(slots),
        "predictions_made_by": made["made_by"],
        "predictions_written": made["written"],
        "predictions_choice": made["shaped_a_choice"],
        **{f"{name}_zh": _in_chinese(made[field], PREDICTIONS_PROVENANCE_ZH)
           for name, field in (("predictions_made_by", "made_by"),
                               ("predictions_written", "written"),
                               ("predictions_choice", "shaped_a_choice"))}})


# The Chinese edition's words for what a record says in English, translated by the language
# model that wrote the record's words: who wrote the sentences of "What the masked model
# learned", when, and whether they shaped a choice; chapter 11's counting models.
PREDICTIONS_PROVENANCE_ZH = {
    "a language model (the one that wrote this script), not a person; none is from IMDB":
        "一个语言模型（即编写这个脚本的语言模型），而不是人；没有一句来自 IMDB",
    "2026-11-30, with this script, the day the two pretraining runs were recorded; they are "
    "scored on those runs' snapshots only":
        "2026-11-30，与这个脚本一起写成，当天记录了两次预训练运行；它们只在这两次运行的快照上评分",
    "no: no run, setting or model was chosen on them": "否：没有任何运行、设置或模型是依据它们选出的",
}
BASELINE_NAMES_ZH = {"majority class": "多数类",
                     "bag of words, logistic regression": "词袋上的逻辑回归",
                     "NBSVM, uni+bigrams": "用一元和二元语法的 NBSVM"}


def _in_chinese(english: str, words: dict[str, str]) -> str:
    """The Chinese edition's words for a record's `english`, refused (ValueError) when the
    record says something the edition has not translated."""
    _check(english in words, f"the Chinese edition translates the record's {english!r}")
    return words[english]


def _plateau_verdict(gain: float) -> str:
    """How far below the frequencies at [MASK] a run ended, in words."""
    return ("left the plateau" if gain > 0.5 else
            "began to leave the plateau" if gain > 0.1 else "stayed on the plateau")


PLATEAU_VERDICT_ZH = {"left the plateau": "离开了平台期",
                      "began to leave the plateau": "开始离开平台期",
                      "stayed on the plateau": "停在平台期上"}


def recipe_sweep(results: Path, draw: bool = True) -> Shown:
    """The loss at [MASK] against minutes for the recorded recipe and the sweep's
    (`tools/records/ch13_mlm_sweep.py`), drawn unless not `draw`; how far each ended below
    the frequencies.

    Described in the appendix "Experiments behind chapter 13", "The recipe sweep"."""
    recorded = PRETRAIN_CPU.read(results)
    runs = recorded["pretraining"]
    frequencies_at_mask = recorded["loss_by_position"]["frequencies alone"]["[MASK]"]
    sweep = PRETRAIN_SWEEP_CPU.read(results)
    preset = runs["mlm"]["model_config"]
    recipes = {"recorded: lr 0.001, dropout 0.1, 15%": (
        recorded["loss_by_position"], runs["mlm"]["snapshot_seconds"], preset)}
    names_zh: dict[str, str] = {}
    for run in sorted(sweep["runs"].values(), key=lambda r: r["model_config"]["d_model"]):
        settings, config = run["settings"], run["model_config"]
        name = (f"lr {settings['lr']:g}, dropout {config['dropout']:g}, "
                f"{settings['mask_prob']:.0%}")
        names_zh[name] = (f"学习率 {settings['lr']:g}、暂退概率 {config['dropout']:g}、"
                          f"掩蔽 {settings['mask_prob']:.0%}")
        if (config["d_model"], config["num_layers"]) != (preset["d_model"],
                                                         preset["num_layers"]):
            name += f"; width {config['d_model']}, {config['num_layers']} blocks"
        seconds = {"0": 0.0, **{str(r["step"]): r["seconds"] for r in run["history"]}}
        recipes[name] = (run["loss_by_position"], seconds, config)
    if draw:
        import matplotlib.pyplot as plt

        fig, axis = plt.subplots(figsize=(7, 3.6))
        for i, (name, (losses, seconds, _)) in enumerate(recipes.items()):
            steps = sorted(int(step) for step in losses["snapshots"] if int(step) > 0)
            axis.plot([seconds[str(s)] / 60 for s in steps],
                      [losses["snapshots"][str(s)]["[MASK]"] for s in steps], "o-",
                      color=f"C{i}", label=name)
        axis.axhline(frequencies_at_mask, color="gray", linestyle=":", linewidth=1)
        axis.set_xlabel("minutes of pretraining (one core)")
        axis.set_ylabel("loss at [MASK] (nats)")
        axis.legend(fontsize=9)
        axis.grid(alpha=0.3)
        fig.tight_layout()
        plt.show()

    def last_loss(losses: dict) -> tuple[int, float]:
        """A run's last snapshot: its step and its loss at [MASK]."""
        step = max(int(step) for step in losses["snapshots"])
        return step, losses["snapshots"][str(step)]["[MASK]"]

    swept = list(recipes.items())[1:]  # the sweep's runs, not the recorded one
    sweep_gains = {name: losses["frequencies alone"]["[MASK]"] - last_loss(losses)[1]
                   for name, (losses, _, _) in swept}
    narrow = [name for name, (_, _, config) in swept
              if config["d_model"] == preset["d_model"]]
    best_recipe = max(narrow, key=sweep_gains.get)
    wide_name, (wide_losses, wide_seconds, wide_config) = next(
        (name, run) for name, run in swept if name not in narrow)
    wide_steps, _ = last_loss(wide_losses)
    narrow_minutes = [seconds[str(last_loss(losses)[0])] / 60
                      for name, (losses, seconds, _) in swept if name in narrow]
    stayed = all(_plateau_verdict(gain) == "stayed on the plateau"
                 for gain in sweep_gains.values())
    return Shown(text={
        "sweep_best": best_recipe, "sweep_best_zh": names_zh[best_recipe],
        "sweep_best_gain": f"{sweep_gains[best_recipe]:.2f}",
        "sweep_gains": ", ".join(f"{sweep_gains[name]:.2f}" for name in narrow),
        "wide_width": wide_config["d_model"],
        "wide_blocks": wide_config["num_layers"],
        "wide_steps": f"{wide_steps:,}",
        "wide_minutes": f"{wide_seconds[str(wide_steps)] / 60:.0f}",
        "narrow_minutes": f"{min(narrow_minutes):.0f} to {max(narrow_minutes):.0f}",
        "wide_gain": f"{sweep_gains[wide_name]:.2f}",
    }, markdown={
        "sweep_verdict": _plateau_verdict(sweep_gains[best_recipe]),
        "sweep_verdict_zh": PLATEAU_VERDICT_ZH[_plateau_verdict(sweep_gains[best_recipe])],
        "wide_verdict": _plateau_verdict(sweep_gains[wide_name]),
        "wide_verdict_zh": PLATEAU_VERDICT_ZH[_plateau_verdict(sweep_gains[wide_name])],
        "sweep_verdict_all": "stayed near the frequencies too" if stayed else
        "did not all stay near the frequencies (the appendix says which left)",
        "sweep_verdict_all_zh": "也都停在频率附近" if stayed else
        "并没有都停在频率附近（附录说明了哪些离开了）"})


def transfer_selection(results: Path) -> Shown:
    """The learning rates tried for the GPT classifier (seed 0, 1,000 labels) and the one
    chosen on validation for each start.

    Described in the appendix "Experiments behind chapter 13"."""
    transfer = TRANSFER_CPU.read(results)
    choices = sorted(transfer["selection"], key=lambda r: (r["init"], r["lr"]))
    chosen = {init: max((r for r in choices if r["init"] == init),
                        key=lambda r: r["validation_accuracy"])["lr"] for init in
              ("pretrained", "scratch")}
    snapshot_step = next(r["gpt"]["step"] for r in choices if r["init"] == "pretrained")
    for init, lr in chosen.items():
        tried = sorted(r["lr"] for r in choices if r["init"] == init)
        _check(tried[0] < lr < tried[-1], f"the chosen rate of the {init} arm lies inside "
               "the grid, not at an edge (a wider grid might beat it)")
    return Shown(escaped_table(
        ["start", "learning rate", "validation % (seed 0, 1,000 labels)", "chosen"],
        [[r["init"], r["lr"], f"{100 * r['validation_accuracy']:.2f}",
          "yes" if chosen[r["init"]] == r["lr"] else ""] for r in choices]),
        {"selection_snapshot_step": f"{snapshot_step:,}"})


def gpt_context(results: Path) -> Shown:
    """Each pretrained GPT's bits per byte against chapter 12's Kneser-Ney models, and its
    loss when it may read only the last 1, 2, 4, ... tokens.

    Described in the appendix "Experiments behind chapter 13", "The causal route: the GPT against
    the same model from scratch"."""
    gpt_runs = TRANSFER_CPU.read(results)["pretraining"]
    ngrams = GPT_NGRAMS.read(results)["runs"]
    contexts = list(next(iter(gpt_runs.values()))["loss_by_context"])
    rows = []
    for name, run in gpt_runs.items():
        scores = run["heldout"]["bits_per_byte"]
        four_gram = ngrams[name]["models"]["Kneser-Ney 4-gram"]["bits_per_byte"]
        _check(abs(ngrams[name]["models"]["GPT"]["bits_per_byte"] - scores["GPT"]) < 1e-9,
               "chapter 12's n-gram record scores the same GPT")
        rows.append([name, f"{scores['GPT']:.3f}", f"{scores['Kneser-Ney bigram']:.3f}",
                     f"{four_gram:.3f}",
                     *(f"{run['loss_by_context'][c]:.2f}" for c in contexts)])
    gained = [run["loss_by_context"]["1"] - run["loss_by_context"][contexts[-1]]
              for run in gpt_runs.values()]
    four_grams = [ngrams[n]["models"]["Kneser-Ney 4-gram"] for n in gpt_runs]
    # Each bigram is counted on its own run's training stream and scored on the same held-out
    # reviews: chapter 12's run put a sentiment token before each labelled review, these two
    # runs did not (--no-labels), and seed 1's stream is cut by a tokenizer of its own.
    chapter_12 = GPT_CPU.read(results)
    first, *others = gpt_runs.values()
    extra = chapter_12["heldout"]["counted_tokens"] - first["heldout"]["counted_tokens"]
    _check(chapter_12["tokenizer"]["sha256"] == first["tokenizer"]["sha256"]
           and all(r["tokenizer"]["sha256"] != first["tokenizer"]["sha256"] for r in others)
           and all(r["heldout"]["bytes"] == chapter_12["heldout"]["bytes"]
                   for r in gpt_runs.values())
           and all(r["data"]["labelled_documents"] == 0 for r in gpt_runs.values())
           and 0 < extra <= chapter_12["data"]["labelled_documents"],
           "the bigrams differ by their streams: chapter 12's held a sentiment token per "
           "labelled review, seed 0's shares its tokenizer, seed 1's has its own, all scored "
           "on the same held-out reviews")
    _check(min(gained) > 0.1, "the longest view beats the last token by over a tenth of a nat")
    _check(all(ngrams[n]["models"]["GPT"]["minus"]["Kneser-Ney 4-gram"]["interval_95"][0] > 0
               for n in gpt_runs), "the 4-gram beats both GPTs")
    return Shown(
        escaped_table(["run", "GPT bits/byte", "KN bigram", "KN 4-gram",
                        *(f"last {c}" for c in contexts)], rows),
        {"longest_context": contexts[-1],
         "context_gain": " and ".join(f"{g:.2f}" for g in gained),
         "gpt_bpb": " and ".join(f"{r['heldout']['bits_per_byte']['GPT']:.3f}"
                                 for r in gpt_runs.values()),
         "kn_bpb": " and ".join(f"{r['heldout']['bits_per_byte']['Kneser-Ney bigram']:.3f}"
                                for r in gpt_runs.values()),
         "kn4_bpb": " and ".join(f"{g['bits_per_byte']:.3f}" for g in four_grams),
         "kn_bpb_chapter_12":
             f"{chapter_12['heldout']['bits_per_byte']['Kneser-Ney bigram']:.3f}",
         "sentiment_tokens": f"{extra:,}"})


def _gpt_arms(transfer: dict) -> dict[tuple[int, str], list[dict]]:
    """The GPT classifier's fine-tuning runs by (labels, start)."""
    by_arm: dict[tuple[int, str], list[dict]] = {}
    for run in transfer["fine_tuning"]:
        by_arm.setdefault((run["labels"], run["init"]), []).append(run)
    return by_arm


def _gpt_gain(by_arm: dict, pretrained: list[dict], labels: int) -> dict:
    """Pretrained runs minus the from-scratch runs with `labels` labels, seed by seed, in
    points, with its 95% t-interval."""
    scratch_by_seed = {r["seed"]: r for r in by_arm[labels, "scratch"]}
    pairs = [(100 * r["test_accuracy"], 100 * scratch_by_seed[r["seed"]]["test_accuracy"])
             for r in pretrained if r["seed"] in scratch_by_seed]
    return paired_difference(*zip(*pairs))


def gpt_transfer_table(results: Path) -> Shown:
    """The GPT classifier, pretrained and from scratch, for each count of labels: seeds,
    learning rate, validation and test accuracy, minutes in all.

    Described in the appendix "Experiments behind chapter 13"."""
    transfer = TRANSFER_CPU.read(results)
    pretraining_minutes = transfer["pretraining_train_seconds"] / 60
    rows = []
    for (labels, init), members in sorted(_gpt_arms(transfer).items()):
        minutes = fmean(m["train_seconds"] for m in members) / 60
        total = minutes + (pretraining_minutes if init == "pretrained" else 0)
        validation = mean_sd([m["validation_accuracy"] for m in members])
        test = mean_sd([m["test_accuracy"] for m in members])
        rows.append([f"{labels:,}", init, len(members), members[0]["lr"],
                     f"{100 * validation[0]:.2f} ± {100 * validation[1]:.2f}",
                     f"{100 * test[0]:.2f} ± {100 * test[1]:.2f}", f"{total:.0f}"])
    return Shown(escaped_table(["labels", "start", "seeds", "lr", "validation %",
                                 "test %", "minutes in all"], rows),
                 {"gpt_pretraining_minutes": f"{pretraining_minutes:.0f}"})


def _gpt_gains(transfer: dict) -> tuple[dict[str, dict], str]:
    """The pretrained GPT's gain over the same model from scratch, by count of labels (as
    the record's keys), checked against the record; and the key of all labels."""
    by_arm = _gpt_arms(transfer)
    gains = transfer["comparisons"]
    gain_by_labels = {}
    for labels in sorted(gains, key=int):
        gain = gain_by_labels[labels] = _gpt_gain(by_arm, by_arm[int(labels), "pretrained"],
                                                  int(labels))
        _check(abs(gain["mean"] - gains[labels]["pretrained_gain_points"]) < 1e-9,
               f"the gain with {labels} labels is the record's")
    return gain_by_labels, max(gains, key=int)


def gpt_gains(results: Path) -> Shown:
    """The pretrained GPT's gain over the same model from scratch, seed by seed, by count
    of labels, with its 95% interval and what it says.

    Described in chapter 13, "Pretrained against from scratch"."""
    transfer = TRANSFER_CPU.read(results)
    gain_by_labels, full = _gpt_gains(transfer)
    rows: list[list[object]] = []
    text: dict[str, object] = {}
    verdicts_zh = {"pretraining pays": "预训练有回报", "pretraining costs": "预训练有损失",
                   "no clear difference": "没有明显差别"}
    for labels, gain in gain_by_labels.items():
        verdict = ("pretraining pays" if gain["low"] > 0 else
                   "pretraining costs" if gain["high"] < 0 else "no clear difference")
        rows.append([f"{int(labels):,}", f"{gain['mean']:+.2f}",
                     f"{gain['low']:+.2f} to {gain['high']:+.2f}", gain["pairs"], verdict])
    for name, labels in [(labels, labels) for labels in gain_by_labels] + [("all", full)]:
        gain = gain_by_labels[labels]
        text[f"gain_{name}"] = f"{gain['mean']:+.2f}"
        text[f"gain_{name}_interval"] = f"{gain['low']:+.2f} to {gain['high']:+.2f}"
        text[f"gain_{name}_verdict"] = next(row[4] for row in rows
                                            if row[0] == f"{int(labels):,}")
        text[f"gain_{name}_verdict_zh"] = verdicts_zh[text[f"gain_{name}_verdict"]]
    text["all_labels"] = f"{int(full):,}"
    scratch_runs = [r for r in transfer["fine_tuning"] if r["init"] == "scratch"]
    text["scratch_longest_minutes"] = (
        f"{max(r['train_seconds'] for r in scratch_runs) / 60:.0f}")
    full_pretrained = [r for r in transfer["fine_tuning"]
                       if r["init"] == "pretrained" and r["labels"] == int(full)]
    rising = sum(r["best_step"] == r["history"][-1]["step"] for r in full_pretrained)
    text["pretrained_still_rising"] = f"at its best in {rising} of {len(full_pretrained)} seeds"
    text["pretrained_still_rising_zh"] = f"{len(full_pretrained)} 个种子中有 {rising} 个"
    paying = [labels for labels, gain in gain_by_labels.items() if gain["low"] > 0]
    reading = ("Three seeds settle the gain only with " + " and ".join(
        f"{int(labels):,} labels" for labels in paying) + ": whether it shrinks as labels "
        "grow, as ULMFiT reported, these intervals cannot say."
        if paying else "No gain is settled by three seeds.")
    reading_zh = ("三个种子只在有 " + " 和 ".join(f"{int(labels)} 个标签" for labels in paying)
                  + "时确定了增益：增益是否像 ULMFiT 报告的那样随标签增多而缩小，这些区间无法回答。"
                  if paying else "三个种子没有确定任何增益。")
    return Shown(escaped_table(["labels", "gain (points)", "95% interval", "seeds",
                                 "verdict"], rows), text,
                 {"transfer_reading": reading, "transfer_reading_zh": reading_zh})


def matched_time(results: Path) -> Shown:
    """The gains of the GPT's snapshots near the masked LM's pretraining time, of its full
    runs, and of the two encoders, each against its own architecture from scratch.

    Described in the appendix "Experiments behind chapter 13", "The causal route at equal
    pretraining time"."""
    arms = _compared(PRETRAIN_CPU.read(results))
    electra, mlm_final = arms["electra"], arms["mlm_final"]
    encoder_rows = [[arm["name"], arm["pretrain_minutes"], 100 * arm["test"][0],
                     arms["paired_arms"](arm, arms["scratch"])]
                    for arm in (electra, mlm_final)]
    transfer = TRANSFER_CPU.read(results)
    by_arm = _gpt_arms(transfer)
    gain_by_labels, full = _gpt_gains(transfer)
    full_pretrained = [r for r in transfer["fine_tuning"]
                       if r["init"] == "pretrained" and r["labels"] == int(full)]
    snapshot_runs: dict[int, list[dict]] = {}
    for run in transfer["snapshot_fine_tuning"]:
        snapshot_runs.setdefault(run["gpt"]["step"], []).append(run)
    gpt_rows = [[f"GPT, {int(step):,} steps", c["pretraining_seconds"] / 60,
                 100 * c["test_accuracy"],
                 _gpt_gain(by_arm, snapshot_runs[int(step)], c["labels"])]
                for step, c in sorted(transfer["snapshot_comparisons"].items(),
                                      key=lambda item: int(item[0]))]
    final_step = next(iter(transfer["pretraining"].values()))["train_config"]["steps"]
    gpt_rows.append([f"GPT, {final_step:,} steps",
                     transfer["pretraining_train_seconds"] / 60,
                     100 * fmean(r["test_accuracy"] for r in full_pretrained),
                     gain_by_labels[full]])
    matched = sorted(encoder_rows + gpt_rows, key=lambda row: row[1])

    _check(gpt_rows[0][3]["low"] > 0 and gpt_rows[-1][3]["low"] <= 0,
           "the GPT snapshot at the masked model's time gains with an interval above zero, "
           "the full run's holds zero")
    _check(all(row[3]["low"] <= 0 <= row[3]["high"] for row in encoder_rows),
           "both encoders' intervals hold zero")
    _check(gpt_rows[0][1] <= mlm_final["pretrain_minutes"], "no more pretraining time")
    return Shown(
        escaped_table(["pretrained", "minutes", "test %", "gain (points)", "95% interval"],
                       [[name, f"{minutes:.0f}", f"{test:.2f}", f"{gain['mean']:+.2f}",
                         f"{gain['low']:+.2f} to {gain['high']:+.2f}"]
                        for name, minutes, test, gain in matched]),
        {"gpt_gains_matched": ", ".join(gain_text(row[3]) for row in gpt_rows),
         "gpt_minutes_matched": ", ".join(f"{row[1]:.0f}" for row in gpt_rows),
         "gpt_minutes_short": f"{gpt_rows[0][1]:.0f}",
         "gpt_gain_short": gain_text(gpt_rows[0][3]),
         "encoder_gains_matched": " and ".join(gain_text(row[3]) for row in encoder_rows)})


def evidence_table(results: Path) -> Shown:
    """Everything the chapter trained, on the same test reviews, next to chapter 11's
    baselines and two of its Transformers (from labels alone; taught by NBSVM on the
    unlabelled reviews); which is best, checked: every Transformer this chapter trained below
    bag of words.

    Described in the appendix "Experiments behind chapter 13", "The evidence table"."""
    question = question_table(results)
    baselines = IMDB_BASELINES.read(results)
    best = _compared(PRETRAIN_CPU.read(results))["best"]
    transfer = TRANSFER_CPU.read(results)
    by_arm = _gpt_arms(transfer)
    _, full = _gpt_gains(transfer)
    taught = IMDB_TAUGHT_BLOCKS.read(results)["taught"]["nbsvm"]
    from_scratch_run = IMDB_CPU.read(results)
    rows = [[row["model"], 100 * row["accuracy"]] for row in baselines["test"]]
    rows.append(["Transformer from labels alone (chapter 11, cpu run)",
                 100 * from_scratch_run["test"]["accuracy"]])
    rows.append([f"Transformer taught by NBSVM (chapter 11, {len(taught['per_seed'])} seeds)",
                 100 * taught["mean"]])
    here = [[f"encoder, {best['name']}, then 1 epoch (3 seeds)", 100 * best["test"][0]]]
    pretrained_zh = ("从零训练" if best["step"] == 0 else
                     f"以 {'MLM' if best['objective'] == 'mlm' else 'ELECTRA'} 预训练 "
                     f"{best['step']} 步")
    names_zh = {here[0][0]: f"{pretrained_zh}、再微调 1 轮的编码器"}
    for (labels, init), members in sorted(by_arm.items()):
        if labels == int(full):
            here.append([f"GPT classifier, {init}, all labels ({len(members)} seeds)",
                         100 * fmean(m["test_accuracy"] for m in members)])
            names_zh[here[-1][0]] = ("用全部标签微调的预训练 GPT 分类器" if init == "pretrained"
                                     else "用全部标签从零训练的 GPT 分类器")
    best_here = max(here, key=lambda row: row[1])
    best_here_zh = names_zh[best_here[0]]
    bag = next(row["accuracy"] for row in baselines["test"]
               if row["model"].startswith("bag of words"))
    best_baseline = max(baselines["test"], key=lambda row: row["accuracy"])
    gpt_pretrained_all = fmean(m["test_accuracy"] for m in by_arm[int(full), "pretrained"])
    chapter_11 = from_scratch_run["test"]["accuracy"]
    _check(best_here[1] < 100 * bag, "every Transformer this chapter trained is below bag of "
           "words")
    _check(gpt_pretrained_all < chapter_11, "the pretrained GPT classifier is below chapter "
           "11's Transformer from labels alone")
    return Shown(
        escaped_table(["model", "test accuracy %"],
                      [[name, f"{value:.2f}"] for name, value in rows + here]),
        {"best_here": f"{best_here[1]:.2f}%",
         "best_here_name": best_here[0].split(" (")[0],
         "best_here_name_zh": best_here_zh,
         "best_baseline": f"{100 * best_baseline['accuracy']:.2f}%",
         "best_baseline_name": best_baseline["model"],
         "best_baseline_name_zh": _in_chinese(best_baseline["model"], BASELINE_NAMES_ZH),
         "gpt_pretrained_all": f"{gpt_pretrained_all:.2%}",
         "chapter_11_scratch": f"{chapter_11:.2%}",
         **{name: question.text[name] for name in ("bag_accuracy", "taught_accuracy",
                                                   "taught_over_bag")}})
