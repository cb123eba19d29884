"""The recorded results that the appendix "Running it for real" quotes: chapter 11's run and its
reruns (on the record's processor and on another), the allocator's memory benchmark, the tuning of the `cpu` preset and the timing of one
training step, each read from `book/results/`, checked, and laid out as the page shows it.

Written by hand, not exported: the page calls each function in one line. The numbers its prose
quotes come back as `{glue key: text}` dictionaries, which the page glues.

What this module deliberately does not handle: making the records (`benchmarks/` and the
`scratchformer` commands write them) and results of other pages.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from statistics import mean, stdev

from IPython.display import Markdown

from scratchbook.pages import markdown_table
from scratchbook.records import (BERT_STEP_BENCHMARK_CPU, CPU_MEMORY, IMDB_CPU, IMDB_CPU_ABLATIONS,
                                 IMDB_CPU_RERUNS, tuning_records)
from scratchformer.runs.hardware import busy_note, recorded_load

PRESET = "none (the cpu preset)"
# Named as the memory benchmark names them, with the short keys the page glues them under.
ALLOCATORS = (("glibc default", "default"), ("fixed at 64 KiB", "64k"),
              ("fixed at 16 MiB", "16m"))


def recorded_run_log(results: Path) -> str:
    """What chapter 11's recorded command printed: the command, a line per validation (the
    best so far marked), and the test accuracy.

    Described in the appendix "Running it for real", section "Chapter 11 in five minutes".
    """
    recorded = IMDB_CPU.read(results)
    lines = [recorded["command"]]
    best = 0.0
    for row in recorded["history"]:
        mark = " (best)" if row["val_accuracy"] > best else ""
        best = max(best, row["val_accuracy"])
        lines.append(f"epoch {row['epoch']}, step {row['step']}: train acc "
                     f"{row['train_accuracy']:.4f} | val acc {row['val_accuracy']:.4f}{mark}")
    lines.append(f"test accuracy {recorded['test']['accuracy']:.4f} on "
                 f"{recorded['test']['examples']:,} reviews")
    return "\n".join(lines)


def rerun_numbers(results: Path) -> dict[str, str]:
    """The rerun of chapter 11's command (the preset's seed 0 of the ablations) against the
    record: its minutes and the spread of the preset's seeds on test. Refuses a rerun that
    differs from the record in processor, torch, test result or any validation accuracy,
    since the page says it matched to the last digit.

    Described in the appendix "Running it for real", section "Chapter 11 in five minutes".
    """
    recorded = IMDB_CPU.read(results)
    preset_runs = IMDB_CPU_ABLATIONS.read(results)["runs"]["preset"]
    rerun = preset_runs["0"]
    same = [rerun["hardware"]["cpu"] == recorded["hardware"]["cpu"],
            rerun["software"]["torch"] == recorded["software"]["torch"],
            rerun["test"] == recorded["test"],
            [r["val_accuracy"] for r in rerun["history"]]
            == [r["val_accuracy"] for r in recorded["history"]]]
    if not all(same):
        raise ValueError("the ablations' preset seed 0 no longer matches imdb_cpu.json in "
                         "processor, torch, test result and validation accuracies")
    test_accuracies = [100 * run["test"]["accuracy"] for run in preset_runs.values()]
    return {"seed_spread": f"{max(test_accuracies) - min(test_accuracies):.2f}",
            "rerun_minutes": f"{rerun['seconds']['total'] / 60:.1f}"}


def processor_name(hardware: dict) -> str:
    """A processor as a sentence names it: "Intel(R) Xeon(R) Processor" -> "Intel Xeon"."""
    return " ".join(hardware["cpu"].replace("(R)", "").replace("(TM)", "")
                    .removesuffix("Processor").split())


def other_processor_numbers(results: Path) -> dict[str, str]:
    """Chapter 11's command run twice on another processor (`imdb_cpu_reruns.json`), against
    the record: the processors, the second step's loss, the first validation and the test.
    Refuses runs that disagree with each other, or that match the record, or a processor that
    is the record's, since the page says the runs repeat themselves there and not the record.

    Described in the appendix "Running it for real", section "Chapter 11 in five minutes".
    """
    reruns = IMDB_CPU_RERUNS.read(results)
    recorded, runs = reruns["recorded"], reruns["runs"]
    numbers = ("first_step_losses", "val_accuracy", "test_accuracy")
    if len(runs) < 2:
        raise ValueError("imdb_cpu_reruns.json holds one run: whether it repeats takes two")
    if any(run[key] != runs[0][key] for run in runs for key in numbers):
        raise ValueError("the reruns of imdb_cpu_reruns.json differ from each other")
    if {processor_name(run["hardware"]) for run in runs} != {processor_name(runs[0]["hardware"])}:
        raise ValueError("the reruns of imdb_cpu_reruns.json ran on different processors")
    rerun = runs[0]
    if processor_name(rerun["hardware"]) == processor_name(recorded["hardware"]):
        raise ValueError("imdb_cpu_reruns.json ran on the record's own processor")
    if rerun["software"]["torch"] != recorded["software"]["torch"]:
        raise ValueError("imdb_cpu_reruns.json ran another torch than the record")
    first_same = rerun["first_step_losses"][0] == recorded["first_step_losses"][0]
    second_same = rerun["first_step_losses"][1] == recorded["first_step_losses"][1]
    if not first_same or second_same:
        raise ValueError("the page says the reruns part from the record at the second step")
    return {"other_cpu": processor_name(rerun["hardware"]),
            "recorded_cpu": processor_name(recorded["hardware"]),
            "other_second_loss": f"{rerun['first_step_losses'][1]:.6f}",
            "recorded_second_loss": f"{recorded['first_step_losses'][1]:.6f}",
            "other_first_val": f"{rerun['val_accuracy'][0]:.4f}",
            "recorded_first_val": f"{recorded['val_accuracy'][0]:.4f}",
            "other_test": f"{100 * rerun['test_accuracy']:.2f}",
            "recorded_test": f"{100 * recorded['test_accuracy']:.2f}",
            "other_test_gap": f"{100 * abs(rerun['test_accuracy'] - recorded['test_accuracy']):.2f}"}


def memory_table(results: Path) -> Markdown:
    """The allocator benchmark: resident memory at the end and time per step, per setting.

    Described in the appendix "Running it for real", section "The command line".
    """
    summary = CPU_MEMORY.read(results)["summary"]
    default = summary["glibc default"]
    return markdown_table(["allocator", "resident MB at the end", "seconds per step",
                           "time per step / default's"],
                          [[name, f"{row['final_mb']:,.0f}", f"{row['seconds_per_step']:.3f}",
                            f"{row['seconds_per_step'] / default['seconds_per_step']:.2f}"]
                           for name, row in summary.items()])


def memory_numbers(results: Path) -> dict[str, object]:
    """What the prose quotes of the allocator benchmark: each setting's final MB and time per
    step against the default's, and the number of steps.

    Described in the appendix "Running it for real", section "The command line".
    """
    memory = CPU_MEMORY.read(results)
    summary = memory["summary"]
    default = summary["glibc default"]
    numbers: dict[str, object] = {}
    for name, key in ALLOCATORS:
        ratio = summary[name]["seconds_per_step"] / default["seconds_per_step"]
        numbers[f"memory_{key}_mb"] = round(summary[name]["final_mb"])  # the prose: `:,`
        numbers[f"memory_{key}_time"] = f"{ratio:.2f}"
    numbers["memory_steps"] = memory["steps"]
    return numbers


def cpu_tuning(results: Path) -> dict[str, dict[int, dict]]:
    """The tuning runs of `book/results/imdb_cpu_tuning/`, by change from the preset (the
    `--set` and `--epochs` of each command, seeds left out) and seed: best validation and last
    training accuracy (%), training minutes, tokens per second, and whether the machine was busy.

    Described in the appendix "Running it for real", section "How the cpu preset was chosen".
    """
    tuning: dict[str, dict[int, dict]] = {}
    for tuning_run in tuning_records(results).values():
        run = tuning_run.read(results)
        words = shlex.split(run["command"])
        changes = [words[i + 1] for i, word in enumerate(words)
                   if word == "--set" and not words[i + 1].startswith("seed=")]
        changes += [f"epochs={words[i + 1]}" for i, word in enumerate(words)
                    if word == "--epochs"]
        best = max(run["history"], key=lambda record: record["val_accuracy"])
        tuning.setdefault(", ".join(changes) or PRESET, {})[run["train_config"]["seed"]] = {
            "val": 100 * best["val_accuracy"],
            "train_last": 100 * run["history"][-1]["train_accuracy"],
            "minutes": sum(r["seconds"] for r in run["history"]) / 60,
            "tokens_per_second": run["throughput"]["train_tokens_per_second"],
            "busy": recorded_load(run)["busy"],
        }
    return tuning


def tuning_busy(tuning: dict[str, dict[int, dict]]) -> bool:
    """Whether any tuning run shared the machine: then no time or speed is shown.

    Described in the appendix "Running it for real", section "How the cpu preset was chosen".
    """
    return any(r["busy"] for runs in tuning.values() for r in runs.values())


def mean_sd(values: list[float], digits: int = 1) -> str:
    """`mean ± standard deviation` of `values`.

    Described in the appendix "Running it for real", section "How the cpu preset was chosen".
    """
    return f"{mean(values):.{digits}f} ± {stdev(values):.{digits}f}"


def tuning_summary(tuning: dict[str, dict[int, dict]]) -> dict[str, dict]:
    """Per change: mean validation accuracy, the mean difference from the preset seed by seed,
    in how many seeds it was lower or higher, and its speed against the preset's. Refuses a
    change with fewer than three seeds.

    Described in the appendix "Running it for real", section "How the cpu preset was chosen".
    """
    preset_runs = tuning[PRESET]
    summary = {}
    for change, runs in sorted(tuning.items(), key=lambda item: (item[0] != PRESET, item[0])):
        seeds = sorted(runs)
        if len(seeds) < 3:
            raise ValueError(f"{change}: {len(seeds)} seed(s); every compared setting "
                             "needs three")
        differences = [runs[seed]["val"] - preset_runs[seed]["val"] for seed in seeds]
        summary[change] = {
            "val": mean([runs[s]["val"] for s in seeds]),
            "difference": mean(differences),
            "differences": differences,
            "lower_in": sum(d < 0 for d in differences),
            "higher_in": sum(d > 0 for d in differences),
            "seeds": len(seeds),
            "speed": mean([runs[s]["tokens_per_second"] for s in seeds])
            / mean([preset_runs[s]["tokens_per_second"] for s in seeds]),
        }
    return summary


def tuning_table(results: Path) -> Markdown:
    """The tuning runs, one row per change from the preset: seeds, best validation accuracy,
    the difference from the preset seed by seed, the last epoch's training accuracy, and
    (on a quiet machine only) minutes and tokens per second.

    Described in the appendix "Running it for real", section "How the cpu preset was chosen".
    """
    tuning = cpu_tuning(results)
    busy = tuning_busy(tuning)
    rows = []
    for change, row in tuning_summary(tuning).items():
        runs = tuning[change]
        seeds = sorted(runs)
        rows.append([
            change, len(seeds), mean_sd([runs[s]["val"] for s in seeds], 2),
            "" if change == PRESET else mean_sd(row["differences"], 2),
            f"{mean([runs[s]['train_last'] for s in seeds]):.1f}",
            *([] if busy else [
                f"{mean([runs[s]['minutes'] for s in seeds]):.1f}",
                f"{mean([runs[s]['tokens_per_second'] for s in seeds]):,.0f}"]),
        ])
    return markdown_table(
        ["change from the cpu preset", "seeds", "best validation accuracy, % (mean ± sd)",
         "minus the preset, same seed (points)", "train accuracy, last epoch, %",
         *([] if busy else ["training minutes", "tokens/s"])],
        rows,
    )


def direction(row: dict) -> str:
    """How a change's validation accuracy moved against the preset's, seed by seed, in words.

    Described in the appendix "Running it for real", section "How the cpu preset was chosen".
    """
    if row["lower_in"] == row["seeds"]:
        return f"lower with every one of the {row['seeds']} seeds"
    if row["higher_in"] == row["seeds"]:
        return f"higher with every one of the {row['seeds']} seeds"
    equal = row["seeds"] - row["higher_in"] - row["lower_in"]
    counts = [f"higher with {row['higher_in']}", f"lower with {row['lower_in']}"]
    counts += [f"equal with {equal}"] if equal else []
    return ", ".join(counts) + f" of the {row['seeds']} seeds"


def tuning_numbers(results: Path) -> dict[str, str]:
    """What the prose may say about the tuning table, computed from it.

    Described in the appendix "Running it for real", section "How the cpu preset was chosen".
    """
    tuning = cpu_tuning(results)
    busy = tuning_busy(tuning)
    summary = tuning_summary(tuning)
    preset_values = [run["val"] for run in tuning[PRESET].values()]
    consistent = [c for c, row in summary.items()
                  if c != PRESET and row["seeds"] in (row["lower_in"], row["higher_in"])]
    mixed = [c for c in summary if c != PRESET and c not in consistent]
    gaps = [run["train_last"] - run["val"]
            for change, runs in tuning.items() if change != "epochs=1"
            for run in runs.values()]
    return {
        "preset_val": mean_sd(preset_values, 2) + "%",
        "preset_range": f"{max(preset_values) - min(preset_values):.2f}",
        "head_only_cost": f"{-summary['truncation=head']['difference']:.2f}",
        "head_only_direction": direction(summary["truncation=head"]),
        "consistent_changes": ", ".join(f"`{c}` ({direction(summary[c])})"
                                        for c in consistent) or "none",
        "mixed_changes": ", ".join(f"`{c}`" for c in mixed) or "none",
        "no_dropout_speed": (
            "(these runs shared the machine with other work, so their speeds are not "
            "compared)" if busy else
            f"processed {summary['dropout=0.0']['speed']:.1f} times as many tokens per second"),
        "tuning_times": ("The runs shared two cores with other work, so the table leaves "
                         "their times out." if busy else ""),
        "no_dropout_direction": direction(summary["dropout=0.0"]),
        "memorise_gap": f"{min(gaps):.1f}",
    }


def step_benchmark(results: Path) -> dict:
    """The timing of one training step of the preset's model, refused unless it was taken on
    the processor that trained chapter 11's run.

    Described in the appendix "Running it for real", section "How the cpu preset was chosen".
    """
    record = BERT_STEP_BENCHMARK_CPU.read(results)
    training_cpu = IMDB_CPU.read(results)["hardware"]["cpu"]
    if record["hardware"]["cpu"] != training_cpu:
        raise ValueError("bert_step_benchmark_cpu.json was timed on another processor than "
                         "the one that trained imdb_cpu.json")
    return record


def step_benchmark_table(results: Path) -> Markdown:
    """The step timings: the command, the benchmark's header (noting a busy machine) and its
    table of precision and threads.

    Described in the appendix "Running it for real", section "How the cpu preset was chosen".
    """
    record = step_benchmark(results)
    return Markdown(f"`{record['command']}`\n\n{record['header']}{busy_note(record)}\n\n"
                    f"{record['table']}")


def step_benchmark_numbers(results: Path) -> dict[str, str]:
    """What the prose quotes of the step timings, and of float32 against bf16 in the tuning.

    Described in the appendix "Running it for real", section "How the cpu preset was chosen".
    """
    speed = {(row["precision"], row["threads"]): row["ratio"]
             for row in step_benchmark(results)["rows"]}
    fp32 = tuning_summary(cpu_tuning(results))["precision=fp32"]
    return {"bf16_ratio": f"{speed[('bf16', 1)]:.2f}",
            "two_threads_gain": f"{speed[('bf16', 1)] / speed[('bf16', 2)]:.2f}",
            "fp32_direction": direction(fp32),
            "fp32_difference": f"{fp32['difference']:+.2f}"}
