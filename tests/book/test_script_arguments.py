"""Every script of `benchmarks/` and `tools/` answers `--help`, and refuses bad arguments the
same way: exit status 2, the error on one line (after argparse's usage, if any), no traceback,
nothing written, and before torch is imported (seconds of a run), except where the argument
is a CUDA device.

The scripts are found by globbing, so a new script fails `test_every_script_has_bad_arguments`
until it has rows in `BAD_ARGUMENTS`. Each row runs in a world of its own (a temporary folder
with stand-in runs, the process's working directory inside it), whose every file and folder is
compared before and after; the repository's `git status` (records, package, scripts) is
compared around each script's rows.
The stand-in runs hold only what the argument checks read (`results.json`'s command, the files'
names): no row gets as far as reading a checkpoint.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from support import ROOT

# modules the scripts import, not scripts
HELPERS = {"benchmarks/script_arguments.py", "tools/records/script_arguments.py",
           "tools/records/shown_command.py", "tools/records/onnx_reviews.py",
           "tools/records/labelled_sentences.py", "tools/records/order_pairs.py",
           "tools/records/paired_tests.py", "tools/records/served_weights.py"}
SCRIPTS = sorted(
    {path.relative_to(ROOT).as_posix()
     for pattern in ("benchmarks/*.py", "tools/records/*.py", "tools/*.py", "tools/*.sh")
     for path in ROOT.glob(pattern)} - HELPERS)

CUDA = torch.cuda.is_available()
# `--device cuda` without CUDA is the case to refuse; where CUDA is present, a device it lacks.
ABSENT_DEVICE = ("cuda:99", "this machine has") if CUDA else ("cuda", "no CUDA device is available")

# script -> rows of (arguments, what the one error line must say). Placeholders name the
# world's paths: {data} an empty folder standing for IMDB, {gpt}/{imdb}/{mlm}/{electra} stand-in
# runs, {runs} the folder holding those four, {transfer} a folder of `ch13_gpt_transfer.py
# run` results, {webimdb} a stand-in web export of a classifier, {empty} an empty folder,
# {file} a text file, {missing} a path that does not exist, {out} a record that may be
# written, {dir} a folder where a file is expected, {readonly} a file in a folder that takes
# no new files (/proc, even for root).
BAD_ARGUMENTS: dict[str, list[tuple[str, str]]] = {
    "benchmarks/attention.py": [
        ("--batch 0", "argument --batch: must be at least 1, got 0"),
        ("--rounds 0", "argument --rounds: must be at least 1"),
        ("--threads 0", "argument --threads: must be at least 1"),
        ("--heads 3", "argument --heads: 3 heads do not divide --d-model 256"),
        ("--seq-lens 256 0", "argument --seq-lens: must be at least 1"),
        ("--warmup -1", "argument --warmup: must be at least 0"),
        ("--batch x", "argument --batch: 'x' is not an integer"),
        (f"--device {ABSENT_DEVICE[0]}", ABSENT_DEVICE[1]),
        ("--device tpu", "'tpu' is not a device"),
        ("--dtype float64", "argument --dtype: invalid choice"),
        ("--json {dir}", "is a folder; name the file to write"),
        ("--json {missing}/a.json", "does not exist"),
        ("--json {readonly}", "refuses new files"),
    ],
    "benchmarks/baselines.py": [
        ("", "the following arguments are required: --data"),
        ("--data {missing}", "argument --data: {missing} does not exist"),
        ("--data {file}", "is a file, not a folder"),
        ("--data {data} --val-size 0", "argument --val-size: must be at least 1"),
        ("--data {data} --threads 0", "argument --threads: must be at least 1"),
        ("--data {data} --seed -1", "argument --seed: must be at least 0"),
        ("--data {data} --record {dir}", "argument --record: {dir} is a folder"),
    ],
    "benchmarks/bert_cpu.py": [
        ("--batch 0", "argument --batch: must be at least 1"),
        ("--seq-len 0", "argument --seq-len: must be at least 1"),
        ("--rounds 0", "argument --rounds: must be at least 1"),
        ("--warmup -1", "argument --warmup: must be at least 0"),
        ("--json {dir}", "argument --json: {dir} is a folder"),
        ("--json {missing}/bert.json", "does not exist"),
    ],
    "benchmarks/cpu_memory.py": [
        ("--steps 0", "argument --steps: must be at least 1"),
        ("--every 0", "argument --every: must be at least 1"),
        ("--steps 100 --every 50", "fewer than three samples"),
        ("--json {dir}", "argument --json: {dir} is a folder"),
    ],
    "benchmarks/gpt_kv_cache.py": [
        ("--lengths 0", "argument --lengths: must be at least 1"),
        ("--lengths 64 -5", "argument --lengths: must be at least 1"),
        ("--rounds 0", "argument --rounds: must be at least 1"),
        ("--threads 0", "argument --threads: must be at least 1"),
        ("--checkpoint {missing}", "argument --checkpoint: {missing} does not exist"),
        ("--checkpoint {imdb}", "is a train-imdb run, not a train-gpt run"),
        ("--checkpoint {empty}", "holds no results.json"),
        ("--json {dir}", "argument --json: {dir} is a folder"),
    ],
    "benchmarks/pretraining.py": [
        ("--steps 0", "argument --steps: must be at least 1"),
        ("--warmup -1", "argument --warmup: must be at least 0"),
        ("--json {dir}", "argument --json: {dir} is a folder"),
        ("--json {readonly}", "refuses new files"),
    ],
    "benchmarks/tokenizer.py": [
        ("--data {missing}", "argument --data: {missing} does not exist"),
        ("--data {dir}", "is not a file"),
        ("--data {file} --merges 0", "argument --merges: must be at least 1"),
        ("--data {file} --repeats 0", "argument --repeats: must be at least 1"),
        ("--data {file} --record {dir}", "argument --record: {dir} is a folder"),
    ],
    "benchmarks/web_boxes.py": [
        ("--site {missing}", "argument --site: {missing} does not exist"),
        ("--site {file}", "is a file, not a folder"),
        ("--rounds 0", "argument --rounds: must be at least 1"),
        ("--tokens 0", "argument --tokens: must be at least 1"),
        ("--record {dir}", "argument --record: {dir} is a folder"),
        ("--record {readonly}", "refuses new files"),
    ],
    "benchmarks/web_contributions.py": [
        ("--model {missing}", "argument --model: {missing} does not exist"),
        ("--model {file}", "is a file, not a folder"),
        ("--reviews {missing}", "argument --reviews: {missing} does not exist"),
        ("--reviews {dir}", "is not a file"),
        ("--record {dir}", "argument --record: {dir} is a folder"),
        ("--record {readonly}", "refuses new files"),
    ],
    "tools/records/appendix_web_precision.py": [
        ("--run {gpt} --data {data} --record {out}", "is a train-gpt run, not a train-imdb run"),
        ("--run {missing} --data {data} --record {out}", "argument --run: {missing} does not exist"),
        ("--run {empty} --data {data} --record {out}", "holds no results.json"),
        ("--run {imdb} --data {missing} --record {out}", "argument --data"),
        ("--run {imdb} --data {data} --record {dir}", "argument --record: {dir} is a folder"),
        ("--run {imdb} --data {data} --record {readonly}", "refuses new files"),
    ],
    "tools/records/ch11_gap.py": [
        ("--record {out}", "the following arguments are required: --data"),
        ("--data {missing} --record {out}", "argument --data: {missing} does not exist"),
        ("--data {file} --record {out}", "argument --data: {file} is a file, not a folder"),
        ("--data {data} --cache {file} --record {out}", "argument --cache: {file} is a file"),
        ("--data {data} --threads 0 --record {out}", "argument --threads: must be at least 1"),
        ("--data {data} --record {dir}", "argument --record: {dir} is a folder"),
        ("--data {data} --record {missing}/gap.json", "does not exist"),
    ],
    "tools/records/ch11_handwritten.py": [
        ("", "the following arguments are required: --checkpoint"),
        ("--checkpoint {gpt}", "is a train-gpt run, not a train-imdb run"),
        ("--checkpoint {missing}", "argument --checkpoint: {missing} does not exist"),
        ("--checkpoint {imdb} --data {missing}", "argument --data: {missing} does not exist"),
        ("--checkpoint {imdb} --reviews {dir}", "argument --reviews: {dir} is not a file"),
        ("--checkpoint {imdb} --pairs {missing}", "argument --pairs: {missing} does not exist"),
        ("--checkpoint {imdb} --record {dir}", "argument --record: {dir} is a folder"),
        ("--checkpoint {imdb} --record {readonly}", "refuses new files"),
    ],
    "tools/records/ch11_record_predictions.py": [
        ("--checkpoint {imdb} --record {out} --errors -3", "argument --errors: must be at least 1, got -3"),
        ("--checkpoint {imdb} --record {out} --errors 0", "argument --errors: must be at least 1"),
        ("--checkpoint {gpt} --record {out}", "is a train-gpt run, not a train-imdb run"),
        ("--checkpoint {missing} --record {out}", "argument --checkpoint: {missing} does not exist"),
        ("--checkpoint {imdb} --data {missing} --record {out}", "argument --data"),
        ("--checkpoint {imdb} --record {dir}", "argument --record: {dir} is a folder"),
    ],
    "tools/records/ch11_taught.py": [
        ("", "the following arguments are required: --data"),
        ("--data {missing} --cache {empty} --teacher nbsvm --out {out}",
         "argument --data: {missing} does not exist"),
        ("--data {data} --cache {empty} --teacher counting --out {out}",
         "argument --teacher: invalid choice: 'counting'"),
        ("--data {data} --cache {empty} --teacher transformer --out {out}",
         "--teacher-checkpoint goes with --teacher transformer, and only there"),
        ("--data {data} --cache {empty} --teacher nbsvm --teacher-checkpoint {file} --out {out}",
         "--teacher-checkpoint goes with --teacher transformer, and only there"),
        ("--data {data} --cache {empty} --teacher nbsvm --limit-unlabelled 0 --out {out}",
         "argument --limit-unlabelled: must be at least 1"),
        ("--data {data} --cache {empty} --teacher nbsvm --out {dir}",
         "argument --out: {dir} is a folder"),
        ("--data {data} --cache {empty} --teacher nbsvm --out {file}",
         "--out {file}: name a .json file"),
        ("--data {data} --cache {empty} --teacher nbsvm --out {dir}.json",
         "--out {dir}.json: {dir} already exists"),
        ("--data {data} --cache {empty} --teacher nbsvm --sentences 0 --out {out}",
         "argument --sentences: must be at least 1"),
    ],
    "tools/records/ch11_sentences.py": [
        ("", "the following arguments are required: --data"),
        ("--data {missing} --cache {empty} --run {imdb}",
         "argument --data: {missing} does not exist"),
        ("--data {data} --cache {empty} --run {missing}",
         "argument --run: {missing} does not exist"),
        ("--data {data} --cache {empty} --run {file}",
         "argument --run: {file} is a file, not a folder"),
        ("--data {data} --cache {empty} --run {imdb} --record {dir}",
         "argument --record: {dir} is a folder"),
        ("--data {data} --cache {empty} --run {imdb} --labelled {missing}",
         "argument --labelled: {missing} does not exist"),
    ],
    "tools/records/ch11_label_sentences.py": [
        ("", "the following arguments are required: step"),
        ("draw --data {missing} --cache {empty} --seeds 0 --out {out}",
         "argument --data: {missing} does not exist"),
        ("draw --data {data} --cache {empty} --seeds 0 --chunks 0 --out {out}",
         "argument --chunks: must be at least 1"),
        ("draw --data {data} --cache {empty} --seeds 0 --out {dir}",
         "{dir} exists: draw writes a new folder"),
        ("gather --out {empty} --answers {file}", "{empty} holds no key.json"),
        ("gather --out {empty} --answers {missing}", "argument --answers: {missing} does not exist"),
    ],
    "tools/records/ch11_shared_words.py": [
        ("", "the following arguments are required: --data"),
        ("--data {missing}", "argument --data: {missing} does not exist"),
        ("--data {file}", "argument --data: {file} is a file, not a folder"),
        ("--data {data} --record {dir}", "argument --record: {dir} is a folder"),
    ],
    "tools/records/ch11_order_pairs.py": [
        ("", "the following arguments are required: --data"),
        ("--data {missing}", "argument --data: {missing} does not exist"),
        ("--data {data} --show-check {dir}", "argument --show-check: {dir} is a folder"),
        ("--data {data} --record {dir}", "argument --record: {dir} is a folder"),
    ],
    "tools/records/ch11_order_scores.py": [
        ("", "the following arguments are required: --data"),
        ("--data {missing}", "argument --data: {missing} does not exist"),
        ("--data {data} --checkpoint {missing}", "argument --checkpoint: {missing} does not exist"),
        ("--data {data} --remedy {file}", "give NAME=RUN"),
        ("--data {data} --remedy r={missing}", "{missing} does not exist"),
        ("--data {data} --remedy r={file}", "no best.pt in"),
        ("--data {data} --record {dir}", "argument --record: {dir} is a folder"),
    ],
    "tools/records/ch11_order_remedy.py": [
        ("", "the following arguments are required: --data"),
        ("--data {missing} --cache {empty} --out {world}/r.json",
         "argument --data: {missing} does not exist"),
        ("--data {data} --cache {empty} --epochs 0 --out {world}/r.json",
         "argument --epochs: must be at least 1"),
        ("--data {data} --cache {empty} --lr 0 --out {world}/r.json",
         "argument --lr: must be above 0"),
        ("--data {data} --cache {empty} --out {file}", "name a .json file"),
        ("--data {data} --cache {empty} --out {dir}.json", "{dir} already exists"),
    ],
    "tools/records/ch11_order_reading.py": [
        ("", "the following arguments are required: --data"),
        ("--data {missing}", "argument --data: {missing} does not exist"),
        ("--data {data} --record {dir}", "argument --record: {dir} is a folder"),
    ],
    "tools/records/ch11_counting_taught.py": [
        ("", "the following arguments are required: --data"),
        ("--data {missing} --out {world}/c.json", "argument --data: {missing} does not exist"),
        ("--data {data} --seed -1 --out {world}/c.json", "argument --seed: must be in [0, 2**63)"),
        ("--data {data} --holdout films --out {world}/c.json", "argument --holdout: invalid choice"),
        ("--data {data} --out {file}", "name a .json file"),
    ],
    "tools/records/ch11_counting_sentences.py": [
        ("", "the following arguments are required: --data"),
        ("--data {missing} --cache {empty} --out {world}/c.json",
         "argument --data: {missing} does not exist"),
        ("--data {data} --cache {empty} --seed x --out {world}/c.json", "argument --seed"),
        ("--data {data} --cache {empty} --out {file}", "name a .json file"),
    ],
    "tools/records/ch11_controls.py": [
        ("", "one of the arguments --counting --keep is required"),
        ("--counting {missing}", "argument --counting: {missing} does not exist"),
        ("--keep {missing}", "argument --keep: {missing} does not exist"),
        ("--counting {file} --keep {file}", "argument --keep: not allowed with argument --counting"),
        ("--counting {file} --predictions {missing}", "argument --predictions: {missing} does not exist"),
        ("--counting {file} --record {dir}", "argument --record: {dir} is a folder"),
    ],
    "tools/records/ch11_sentences_equal.py": [
        ("", "the following arguments are required: --counting"),
        ("--counting {missing}", "argument --counting: {missing} does not exist"),
        ("--counting {file} --served", "--served needs --data and --cache"),
        ("--counting {file} --record {dir}", "argument --record: {dir} is a folder"),
    ],
    "tools/records/ch11_test_predictions.py": [
        ("", "the following arguments are required: --data, --cache, --out"),
        ("--data {data} --cache {empty} --out {world}/p.npz",
         "one of the arguments --run --served is required"),
        ("--run {imdb} --served --data {data} --cache {empty} --out {world}/p.npz",
         "not allowed with argument"),
        ("--run {missing} --data {data} --cache {empty} --out {world}/p.npz",
         "argument --run: {missing} does not exist"),
        ("--run {empty} --data {data} --cache {empty} --out {world}/p.npz", "no best.pt in"),
        ("--run {imdb} --data {data} --cache {empty} --out {world}/p.json",
         "name a .npz file"),
        ("--run {imdb} --data {missing} --cache {empty} --out {world}/p.npz",
         "argument --data: {missing} does not exist"),
    ],
    "tools/records/ch11_taught_record.py": [
        ("", "the following arguments are required: --run"),
        ("--run {missing}", "argument --run: {missing} does not exist"),
        ("--run {file} --record {dir}", "argument --record: {dir} is a folder"),
        ("--run {file} --untaught {missing}", "argument --untaught: {missing} does not exist"),
        ("--run {file} --short {file}", "--short goes with --untaught"),
    ],
    "tools/records/ch11_whole_review.py": [
        ("", "the following arguments are required: --run"),
        ("--run {gpt} {imdb}", "is a train-gpt run, not a train-imdb run"),
        ("--run {missing}", "argument --run: {missing} does not exist"),
        ("--run {imdb} {imdb}", "an interval needs at least two runs"),
        ("--run {imdb} --record {dir}", "argument --record: {dir} is a folder"),
    ],
    "tools/records/ch11_why_it_loses.py": [
        ("record --data {data} --work {empty}", "holds no runs/ folder"),
        ("record --data {data} --work {world} --record {dir}", "argument --record: {dir} is a folder"),
        ("run --data {missing} --work {empty}", "argument --data: {missing} does not exist"),
        ("run --data {data} --work {file}", "argument --work: {file} is a file"),
        ("sweep --data {data} --work {empty}", "invalid choice: 'sweep'"),
    ],
    "tools/records/ch12_ngram_orders.py": [
        ("--data {data} --cache {world}/cache --run {imdb} --record {out}",
         "is a train-imdb run, not a train-gpt run"),
        ("--data {data} --cache {world}/cache --run {missing} --record {out}", "argument --run"),
        ("--data {data} --cache {world}/cache --run {gpt} --record {dir}", "argument --record"),
        ("--data {data} --cache {world}/cache --record {out}", "required: --run"),
    ],
    "tools/records/ch12_sentiment_token.py": [
        ("--reviews 0 --data {data} --model {gpt} --record {out}", "argument --reviews: must be at least 1, got 0"),
        ("--reviews -5 --data {data} --model {gpt} --record {out}", "argument --reviews: must be at least 1, got -5"),
        ("--data {data} --model {gpt} --record {out}", "holds no manifest.json, model.onnx: not a web export"),
        ("--data {data} --model {webimdb} --record {out}", "is the web export of a classifier, not of a GPT"),
        ("--data {data} --model {missing} --record {out}", "argument --model: {missing} does not exist"),
        ("--record {dir} --data {data} --model {gpt}", "argument --record: {dir} is a folder"),
        ("--data {data} --record {out}", "required: --model"),
    ],
    "tools/records/ch13_electra_losses.py": [
        ("--run {mlm} --record {out}", "is a mlm run, not an ELECTRA run"),
        ("--run {gpt} --record {out}", "is a train-gpt run, not a pretrain run"),
        ("--run {missing} --record {out}", "argument --run: {missing} does not exist"),
        ("--run {electra} --record {dir}", "argument --record: {dir} is a folder"),
    ],
    "tools/records/ch13_gpt_transfer.py": [
        ("record --runs {missing} --gpt {gpt} --record {out}", "argument --runs: {missing} does not exist"),
        ("record --runs {empty} --gpt {gpt} --record {out}", "holds no results file of `run`"),
        ("record --runs {transfer} --gpt {imdb} --record {out}", "is a train-imdb run, not a train-gpt run"),
        ("record --runs {transfer} --gpt {gpt} --record {dir}", "argument --record: {dir} is a folder"),
        ("record --runs {transfer} --gpt {gpt} --record {out} --context-reviews 0",
         "argument --context-reviews: must be at least 1"),
        ("run --gpt {imdb} --data {data} --out {out}", "is a train-imdb run, not a train-gpt run"),
        ("run --gpt {gpt} --data {data} --out {out} --labels -1", "argument --labels: must be at least 0"),
        ("run --gpt {gpt} --data {data} --out {out} --lr 0", "argument --lr: must be above 0"),
        ("run --gpt {gpt} --data {data} --out {out} --threads 0", "argument --threads: must be at least 1"),
        ("run --gpt {gpt} --data {data} --out {out} --seed -1", "argument --seed"),
        (f"run --gpt {{gpt}} --data {{data}} --out {{out}} --device {ABSENT_DEVICE[0]}", ABSENT_DEVICE[1]),
        ("run --gpt {gpt} --data {data} --out {dir}", "argument --out: {dir} is a folder"),
        ("run --gpt {gpt} --data {data} --out /proc/transfer/a.json", "refuses new files"),
    ],
    "tools/records/running_reruns.py": [
        ("--runs {imdb} --record {out}", "name two runs or more"),
        ("--runs {imdb} {empty} --record {out}", "no results.json in {empty}"),
        ("--runs {imdb} {missing} --record {out}", "argument --runs: {missing} does not exist"),
        ("--runs {imdb} {gpt} --record {dir}", "argument --record: {dir} is a folder"),
    ],
    "tools/records/ch13_mlm_sweep.py": [
        ("--runs {empty} --record {out}", "holds no finished masked-LM pretrain run"),
        ("--runs {missing} --record {out}", "argument --runs: {missing} does not exist"),
        ("--runs {runs} --record {dir}", "argument --record: {dir} is a folder"),
    ],
    "tools/records/ch13_objectives.py": [
        ("--runs {empty} --record {out}", "has no tune/ folder of fine-tuning runs"),
        ("--runs {missing} --record {out}", "argument --runs: {missing} does not exist"),
        ("--runs {runs} --record {dir}", "argument --record: {dir} is a folder"),
    ],
    "tools/records/ch13_record_pretraining.py": [
        ("--runs {empty} --record {out}", "argument --runs: {empty}/mlm does not exist"),
        ("--runs {missing} --record {out}", "argument --runs: {missing} does not exist"),
        ("--runs {runs} --record {dir}", "argument --record: {dir} is a folder"),
    ],
    "tools/export.py": [
        ("--bogus", "unrecognized arguments: --bogus"),
        ("--check --force", "not allowed with argument --check"),
        ("--root {empty} --check", "argument --root: {empty} is not the root of a book"),
        ("--run-chapter 99", "there is no chapter 99"),
        ("--where nonsense", "nonsense is not a line of a module the chapters generate"),
        ("new-chapter x y z", "argument number: invalid int value: 'x'"),
    ],
    "tools/translations.py": [
        ("", "the following arguments are required: command"),
        ("--language xx coverage", "argument --language: invalid choice: 'xx'"),
        ("update --start book/99_nope", "argument --start: not pages of the book (_toc.yml): book/99_nope"),
        ("coverage extra", "unrecognized arguments: extra"),
    ],
    "tools/gpu_check.sh": [
        ("--out {out}", "unrecognized arguments: --out"),
        ("--help extra", "unrecognized arguments: --help extra"),
    ],
}


def make_world(folder: Path) -> dict[str, str]:
    """The stand-in files and runs the rows name, under `folder`; the placeholders' values."""
    runs = folder / "runs"
    made = {
        "gpt": ("scratchformer train-gpt --out runs/gpt", ["best.pt", "tokenizer.json"], {}),
        "imdb": ("scratchformer train-imdb --out runs/imdb", ["best.pt"], {}),
        "mlm": ("scratchformer pretrain --out runs/mlm", ["tokenizer.json"], {"objective": "mlm"}),
        "electra": ("scratchformer pretrain --out runs/electra --objective electra", ["tokenizer.json"],
                    {"objective": "electra"}),
    }
    for name, (command, files, settings) in made.items():
        (runs / name).mkdir(parents=True)
        (runs / name / "results.json").write_text(json.dumps({"command": command, "settings": settings}))
        for file in files:
            (runs / name / file).write_bytes(b"")
    for name in ("data", "empty", "transfer", "cwd"):
        (folder / name).mkdir()
    (folder / "transfer" / "pretrained_100_s0.json").write_text("{}")
    (folder / "webimdb").mkdir()  # a classifier's web export: its manifest, empty model files
    (folder / "webimdb" / "manifest.json").write_text(json.dumps({"kind": "classifier"}))
    for file in ("model.onnx", "tokenizer.json"):
        (folder / "webimdb" / file).write_bytes(b"")
    (folder / "notes.txt").write_text("not a folder\n")
    return {"world": str(folder), "runs": str(runs), **{name: str(runs / name) for name in made},
            "data": str(folder / "data"), "empty": str(folder / "empty"),
            "transfer": str(folder / "transfer"), "webimdb": str(folder / "webimdb"),
            "file": str(folder / "notes.txt"),
            "missing": str(folder / "missing"), "out": str(folder / "record.json"),
            "dir": str(folder / "data"), "readonly": "/proc/record.json"}


def tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under `folder`: (size, modification time in ns)."""
    return {path.relative_to(folder).as_posix(): (path.stat().st_size, path.stat().st_mtime_ns)
            for path in folder.rglob("*")}


def command(script: str, arguments: list[str]) -> list[str]:
    """How to run `script`; Python lists the modules it imports on stderr (`-X importtime`)."""
    interpreter = ["bash"] if script.endswith(".sh") else [sys.executable, "-X", "importtime"]
    return [*interpreter, str(ROOT / script), *arguments]


def split_imports(stderr: str) -> tuple[list[str], bool]:
    """The lines of `stderr` the script wrote, and whether it imported torch."""
    lines = stderr.splitlines()
    imports = [line for line in lines if line.startswith("import time:")]
    torch_imported = any(re.search(r"\|\s+torch$", line) for line in imports)
    return [line for line in lines if not line.startswith("import time:")], torch_imported


def environment(world: Path) -> dict[str, str]:
    """No $IMDB_DIR, no network, and gpu_check.sh's $OUT inside the world."""
    env = {key: value for key, value in os.environ.items() if key != "IMDB_DIR"}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", OUT=str(world / "gpu-check"))
    return env


def repository_state() -> str:
    """`git status` of where a script could write by default: its records, the package, the
    scripts themselves."""
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", "book",
                           "src", "benchmarks", "tools"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout


def refusal_problems(script: str, arguments: str, expected: str, world: Path) -> list[str]:
    """What is wrong with how `script` refuses `arguments` (nothing, if it refuses them well)."""
    paths = make_world(world)
    words = [word.format(**paths) for word in arguments.split()]
    before = tree(world)
    done = subprocess.run(command(script, words), cwd=world / "cwd", env=environment(world),
                          capture_output=True, text=True, timeout=120)
    shown = f"{script} {' '.join(words)}"
    problems = []
    if done.returncode != 2:
        problems.append(f"{shown}: exit status {done.returncode}, not 2")
    written, torch_imported = split_imports(done.stderr)
    lines = written
    if lines and lines[0].startswith("usage:"):  # argparse's usage, then its error
        lines = lines[1:]
        while lines and lines[0].startswith(" "):
            lines = lines[1:]
    if "Traceback" in done.stderr or len(lines) != 1:
        problems.append(f"{shown}: stderr is not one line of error after the usage:\n"
                        + "\n".join(written))
    elif expected.format(**paths) not in lines[0]:
        problems.append(f"{shown}: {lines[0]!r} does not say {expected.format(**paths)!r}")
    if torch_imported and "--device" not in arguments:
        problems.append(f"{shown}: imported torch before refusing")
    if tree(world) != before:
        changed = sorted(set(tree(world).items()) ^ set(before.items()))
        problems.append(f"{shown}: the files changed: {changed}")
    return problems


def test_every_script_has_bad_arguments() -> None:
    """A script added to benchmarks/ or tools/ needs its rows of bad arguments here."""
    assert len(SCRIPTS) >= 19, SCRIPTS  # the glob found the scripts
    assert set(SCRIPTS) == set(BAD_ARGUMENTS), (
        f"without rows: {sorted(set(SCRIPTS) - set(BAD_ARGUMENTS))}; "
        f"rows for no script: {sorted(set(BAD_ARGUMENTS) - set(SCRIPTS))}")


@pytest.mark.parametrize("script", SCRIPTS)
def test_help(script: str, tmp_path: Path) -> None:
    """`--help` exits 0, prints the usage and writes nothing, without importing torch."""
    (tmp_path / "cwd").mkdir()
    before = tree(tmp_path)
    done = subprocess.run(command(script, ["--help"]), cwd=tmp_path / "cwd",
                          env=environment(tmp_path), capture_output=True, text=True, timeout=120)
    written, torch_imported = split_imports(done.stderr)
    assert done.returncode == 0 and written == [], done.stderr
    assert not torch_imported
    assert "usage:" in done.stdout or "One command for a machine" in done.stdout, done.stdout
    assert tree(tmp_path) == before


@pytest.mark.parametrize("script", SCRIPTS)
def test_bad_arguments_are_refused_in_one_line_before_any_work(script: str, tmp_path: Path) -> None:
    rows = BAD_ARGUMENTS.get(script)
    assert rows, f"{script} has no rows of bad arguments in BAD_ARGUMENTS"
    repository = repository_state()
    with ThreadPoolExecutor(max_workers=4) as pool:
        found = pool.map(lambda item: refusal_problems(script, *item[1], tmp_path / f"row{item[0]}"),
                         enumerate(rows))
        problems = [problem for row in found for problem in row]
    assert not problems, "\n".join(problems)
    assert repository_state() == repository, "a refused command changed the repository"


def test_tokenizer_benchmark_without_tokenizers(tmp_path: Path) -> None:
    """HuggingFace's `tokenizers` (the `bench` extra) is missing: `--help` still works, and a
    run says what to install in one line, before reading anything."""
    script = ROOT / "benchmarks" / "tokenizer.py"
    data = tmp_path / "reviews.jsonl"
    data.write_text('{"text": "A fine film."}\n')

    def run_without_tokenizers(*arguments: str) -> subprocess.CompletedProcess:
        program = ("import runpy, sys; sys.modules['tokenizers'] = None; "  # import tokenizers fails
                   f"sys.path.insert(0, {str(script.parent)!r}); "  # as `python benchmarks/...` does
                   f"sys.argv = [{str(script)!r}, *{list(arguments)!r}]; "
                   f"runpy.run_path({str(script)!r}, run_name='__main__')")
        return subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120)

    helped = run_without_tokenizers("--help")
    assert helped.returncode == 0 and "usage:" in helped.stdout, helped.stderr
    ran = run_without_tokenizers("--data", str(data), "--no-codepoints")
    assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stderr
    assert ran.stderr.strip().splitlines() == [
        "benchmarks/tokenizer.py compares with HuggingFace's `tokenizers`, which is not installed: "
        "pip install 'scratchformer[bench]'"]
