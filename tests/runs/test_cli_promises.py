"""Chapters 12 and 13: `train-gpt`, `generate` and `pretrain` keep the promises `train-imdb` keeps.

Nothing lost (an `--overwrite` that fails leaves the old run byte for byte), nothing faked (a
resumed run with other data, a swapped tokenizer, an edited configuration or non-finite weights
is refused, naming what differs), and messages a user can act on. The runs are made once per
module with tiny presets on the toy data; the promises are checked through the command's `main`
in this process (`support.runs.cli`), and through the installed `scratchformer` command or a
wrapper in a subprocess where a process matters (a real stdin, Ctrl-C).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from scratchformer.cli.args import command_line_texts
from scratchformer.cli.commands import main
from scratchformer.models.bert import BertConfig
from scratchformer.models.gpt import (GPTConfig, GPTModel, generate,
                                      next_token_probabilities)
from scratchformer.models.pretraining import BertForMaskedLM, mask_tokens, masked_lm_loss
from scratchformer.tokenize.bpe import BPETokenizer
from scratchformer.train.pretrain import PretrainConfig

from support.runs import cli, installed_cli, refused

THREADS = ["--threads", "1", "--no-progress", "--device", "cpu"]


def gpt_arguments(data: Path, out: Path, cache: Path, *more: str) -> list[str]:
    return ["train-gpt", "--data", str(data), "--out", str(out), "--config", "tiny",
            "--val-documents", "20", "--tokenizer-documents", "100", "--heldout", "10",
            "--cache", str(cache), *THREADS, *more]


def pretrain_arguments(data: Path, out: Path, *more: str) -> list[str]:
    return ["pretrain", "--data", str(data), "--out", str(out), "--config", "tiny",
            "--val-documents", "20", "--tokenizer-documents", "100", *THREADS, *more]


def tune_arguments(data: Path, out: Path, snapshot: Path, *more: str) -> list[str]:
    return ["train-imdb", "--data", str(data), "--out", str(out), "--config", "tiny",
            "--init", str(snapshot), "--no-test", "--epochs", "1", *THREADS, *more]


def hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file under `folder`, by relative path."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, toy_dir: Path) -> dict[str, Path]:
    """A finished train-gpt run, a pretrain run (snapshots at 0, 4 and 8 steps), and a classifier
    fine-tuned from its last snapshot; made in-process, once."""
    root = tmp_path_factory.mktemp("promises")
    made = {"root": root, "data": toy_dir, "cache": root / "cache", "gpt": root / "gpt",
            "pretrained": root / "pretrained", "tuned": root / "tuned"}
    assert main(gpt_arguments(toy_dir, made["gpt"], made["cache"])) == 0
    assert main(pretrain_arguments(toy_dir, made["pretrained"])) == 0
    made["snapshot"] = made["pretrained"] / "snapshot-0000008.pt"
    assert main(tune_arguments(toy_dir, made["tuned"], made["snapshot"])) == 0
    return made


def copy_run(runs: dict, name: str, tmp_path: Path) -> Path:
    copy = tmp_path / name
    shutil.copytree(runs[name], copy)
    return copy


def edit_checkpoint(path: Path, change) -> None:
    payload = torch.load(path, weights_only=True)
    change(payload)
    torch.save(payload, path)


# --- 1. nothing in the folder changes until every check has passed -------------------------


@pytest.mark.parametrize(("command", "setting", "phrase"), [
    ("train-gpt", "context_length=1000000", "holds no window"),
    ("pretrain", "max_len=8", "longer than max_len 8"),
    ("pretrain", "window=100000", "window 100000 is longer than max_len"),
])
def test_an_overwrite_that_fails_a_check_leaves_the_old_run_as_it_was(
        runs: dict, tmp_path: Path, command: str, setting: str, phrase: str) -> None:
    name = "gpt" if command == "train-gpt" else "pretrained"
    out = copy_run(runs, name, tmp_path)
    before = hashes(out)
    arguments = (gpt_arguments(runs["data"], out, runs["cache"]) if command == "train-gpt"
                 else pretrain_arguments(runs["data"], out))
    other = ["--tokenizer-documents", "50"]  # a new run would write another tokenizer
    refused(cli(*arguments, "--overwrite", *other, "--set", setting), phrase)
    assert hashes(out) == before


# --- 2. classify - splits stdin on line breaks only --------------------------------------------


def test_classify_reads_one_text_per_line_whatever_else_the_text_holds(runs: dict) -> None:
    texts = ["a review\u0085with a next-line", "one\u2028with a line separator", "a form\x0cfeed"]
    assert command_line_texts(["-"], _Stdin("\n".join(texts) + "\n")) == texts
    assert command_line_texts(["-"], _Stdin("one\r\ntwo\r\n")) == ["one", "two"]
    result = installed_cli("classify", "--checkpoint", str(runs["tuned"]), "--json", "-",
                           stdin="\r\n".join(texts) + "\r\n")
    assert result.returncode == 0, result.stderr[-2000:]
    assert [r["text"] for r in json.loads(result.stdout)] == texts


class _Stdin:
    """A text stream with the bytes of `text` behind it, as `sys.stdin` has."""

    def __init__(self, text: str) -> None:
        import io

        self.buffer = io.BytesIO(text.encode("utf-8"))


# --- 3. resume refuses other data, settings and --init, naming only what differs ---------------


def test_resume_refuses_other_data_naming_the_field(runs: dict, tmp_path: Path) -> None:
    pretrained = copy_run(runs, "pretrained", tmp_path)
    refused(cli(*pretrain_arguments(runs["data"], pretrained, "--resume", "--limit", "300")),
            "limit None then, 300 now")
    refused(cli(*pretrain_arguments(runs["data"], pretrained, "--resume", "--val-documents", "30")),
            "val_documents 20 then, 30 now")
    gpt = copy_run(runs, "gpt", tmp_path)
    refused(cli(*gpt_arguments(runs["data"], gpt, runs["cache"], "--resume", "--limit", "250")),
            "limit None then, 250 now")
    result = cli(*gpt_arguments(runs["data"], gpt, runs["cache"], "--resume", "--set", "lr=0.02"))
    refused(result, "lr 0.01 then, 0.02 now")
    assert "'d_model'" not in result.stderr and "vocab_size" not in result.stderr, "only what differs"
    tuned = copy_run(runs, "tuned", tmp_path)
    other = runs["pretrained"] / "snapshot-0000004.pt"
    refused(cli(*tune_arguments(runs["data"], tuned, other, "--resume")), "init")


# --- 4. a checkpoint names its tokenizer, and every reader uses it -------------------------------


def test_a_model_fine_tuned_from_a_snapshot_classifies_with_its_tokenizer(runs: dict) -> None:
    result = cli("classify", "--checkpoint", str(runs["tuned"]), "a wonderful film")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split()[0] in ("negative", "positive")
    recorded = torch.load(runs["tuned"] / "best.pt", weights_only=True)["training"]["data"]
    tokenizer = runs["tuned"] / "tokenizer.json"
    assert recorded["tokenizer"] == hashlib.sha256(tokenizer.read_bytes()).hexdigest()
    assert tokenizer.read_bytes() == (runs["pretrained"] / "tokenizer.json").read_bytes()


@pytest.fixture(scope="module")
def foreign_tokenizer(runs: dict) -> Path:
    """A tokenizer of the same size as the pretraining run's, learned from other documents."""
    texts = [json.loads(line)["text"] for line in (runs["data"] / "train.jsonl").read_text().splitlines()]
    from scratchformer.models.pretraining import train_bert_tokenizer

    tokenizer = train_bert_tokenizer(texts[::-1][:30], 300)
    path = runs["root"] / "foreign-tokenizer.json"
    tokenizer.save(path)
    assert tokenizer.n_vocab == BPETokenizer.load(runs["pretrained"] / "tokenizer.json").n_vocab
    assert path.read_bytes() != (runs["pretrained"] / "tokenizer.json").read_bytes()
    return path


def test_a_swapped_tokenizer_of_the_same_size_is_refused(runs: dict, tmp_path: Path,
                                                         foreign_tokenizer: Path) -> None:
    pretrained = copy_run(runs, "pretrained", tmp_path)
    shutil.copy(foreign_tokenizer, pretrained / "tokenizer.json")
    refused(cli(*tune_arguments(runs["data"], tmp_path / "tuned", pretrained / "snapshot-0000008.pt")),
            "was trained with the tokenizer")
    refused(cli(*pretrain_arguments(runs["data"], pretrained, "--resume")), "tokenizer")
    tuned = copy_run(runs, "tuned", tmp_path)
    shutil.copy(foreign_tokenizer, tuned / "tokenizer.json")
    refused(cli("classify", "--checkpoint", str(tuned), "a fine film"), "was trained with the tokenizer")
    gpt = copy_run(runs, "gpt", tmp_path)
    refused(cli("generate", "--checkpoint", str(gpt), "--tokenizer", str(foreign_tokenizer)),
            "was trained with the tokenizer")


def test_an_edited_configuration_with_the_same_shapes_is_refused(runs: dict, tmp_path: Path) -> None:
    gpt, tuned = copy_run(runs, "gpt", tmp_path), copy_run(runs, "tuned", tmp_path)
    for path in (gpt / "best.pt", tuned / "best.pt"):
        edit_checkpoint(path, lambda payload: payload["config"].update(num_heads=1))
    refused(cli("generate", "--checkpoint", str(gpt)), "not the one it was trained with")
    refused(cli("classify", "--checkpoint", str(tuned), "a fine film"), "not the one it was trained with")


# --- 5. non-finite weights are refused by every loader -------------------------------------------


def poisoned(path: Path) -> None:
    def change(payload: dict) -> None:
        name = next(k for k, v in payload["model"].items() if v.is_floating_point())
        payload["model"][name] = payload["model"][name].clone().fill_(float("nan"))
    edit_checkpoint(path, change)


def test_non_finite_weights_are_refused_by_every_loader(runs: dict, tmp_path: Path) -> None:
    gpt, tuned = copy_run(runs, "gpt", tmp_path), copy_run(runs, "tuned", tmp_path)
    pretrained = copy_run(runs, "pretrained", tmp_path)
    for path in (gpt / "best.pt", gpt / "last.pt", tuned / "best.pt", pretrained / "snapshot-0000008.pt",
                 pretrained / "last.pt"):
        poisoned(path)
    phrase = "hold NaN or infinity"
    refused(cli("classify", "--checkpoint", str(tuned), "a fine film"), phrase)
    refused(cli("generate", "--checkpoint", str(gpt)), phrase)
    refused(cli("generate", "--checkpoint", str(runs["gpt"]), "--judge", str(tuned)), phrase)
    refused(cli(*tune_arguments(runs["data"], tmp_path / "new", pretrained / "snapshot-0000008.pt")), phrase)
    refused(cli(*gpt_arguments(runs["data"], gpt, runs["cache"], "--resume")), phrase)
    refused(cli(*pretrain_arguments(runs["data"], pretrained, "--resume")), phrase)
    refused(cli(*gpt_arguments(runs["data"], tmp_path / "tuned-gpt", runs["cache"], "--init", str(gpt))),
            phrase)


# --- 6. and 7. settings that cannot be honoured are refused -----------------------------------


def test_pad_id_is_the_tokenizers_and_cannot_be_set(runs: dict, tmp_path: Path) -> None:
    refused(cli(*tune_arguments(runs["data"], tmp_path / "a", runs["snapshot"], "--set", "pad_id=0")),
            "cannot set pad_id=0 (the snapshot has 296)")
    refused(cli(*tune_arguments(runs["data"], tmp_path / "b", runs["snapshot"], "--set", "d_model=32")),
            "d_model=32")
    refused(cli(*tune_arguments(runs["data"], tmp_path / "w", runs["snapshot"],
                                "--set", "truncation=windows")),
            "truncation='windows' cuts GPT-2's tokens", "use truncation=head or head+tail")
    assert not (tmp_path / "w").exists() or not any((tmp_path / "w").iterdir())
    refused(cli(*pretrain_arguments(runs["data"], tmp_path / "c", "--set", "pad_id=5")), "pad_id cannot be set")
    assert not (tmp_path / "c").exists() or not any((tmp_path / "c").iterdir())


@pytest.mark.parametrize("change", [
    {"rtd_weight": -5.0}, {"lr": float("nan")}, {"lr": float("inf")}, {"weight_decay": float("inf")},
    {"grad_clip": float("nan")}, {"steps": 2.5}, {"seed": 1.5}, {"window": 64.0}, {"seed": 2**63},
    {"steps": True},
])
def test_pretrain_config_refuses_what_would_fail_late(change: dict) -> None:
    with pytest.raises(ValueError):
        PretrainConfig(**change)


def test_a_negative_rtd_weight_is_refused_by_the_command(runs: dict, tmp_path: Path) -> None:
    refused(cli(*pretrain_arguments(runs["data"], tmp_path / "run", "--objective", "electra",
                                    "--set", "rtd_weight=-5")), "rtd_weight must be >= 0")


# --- 8. and the rest of what generate is asked ----------------------------------------------------


def test_generate_refuses_what_it_cannot_do_before_sampling(runs: dict) -> None:
    gpt = str(runs["gpt"])
    refused(cli("generate", "--checkpoint", gpt, "--prompt", "the movie was " * 20),
            "no token is left to write", "shorten the prompt")
    result = cli("generate", "--checkpoint", gpt, "--prompt", "x" * 100_000)
    refused(result, "shorten the prompt")
    assert "got -" not in result.stderr, "no negative count of new tokens"
    result = cli("generate", "--checkpoint", gpt, "--prompt", "<|endoftext|> hi")
    refused(result, "remove it")
    assert "allowed_special" not in result.stderr
    refused(cli("generate", "--checkpoint", gpt, "--show-top", "100000"), "the vocabulary has only 300")
    refused(cli("generate", "--checkpoint", gpt, "--seed", str(2**63)), "must be in [0, 2**63)")
    refused(cli("generate", "--checkpoint", gpt, "--device", "meta"), "cpu or cuda")
    cold = cli("generate", "--checkpoint", gpt, "--temperature", "1e-45", "--max-new-tokens", "4")
    greedy = cli("generate", "--checkpoint", gpt, "--temperature", "0", "--max-new-tokens", "4")
    assert cold.returncode == 0, cold.stderr[-2000:]
    assert cold.stdout == greedy.stdout, "a temperature too small to divide by is greedy"


def test_generate_escapes_control_characters_of_the_prompt(runs: dict) -> None:
    result = cli("generate", "--checkpoint", str(runs["gpt"]), "--prompt", "red \x1b[31mtext",
                 "--max-new-tokens", "2")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "\x1b" not in result.stdout and "\\x1b[31mtext" in result.stdout


def test_train_gpt_refuses_more_heldout_reviews_than_the_test_split_before_training(
        runs: dict, tmp_path: Path) -> None:
    out = tmp_path / "run"
    refused(cli(*gpt_arguments(runs["data"], out, runs["cache"], "--heldout", "30000")),
            "--heldout 30000", "only 40 reviews")
    assert not out.exists() or not any(out.iterdir()), "refused before anything was written"


def test_a_file_that_would_run_code_is_refused_without_torchs_advice(tmp_path: Path) -> None:
    import os

    class RunsCode:
        def __reduce__(self) -> tuple:
            return (os.system, ("true",))

    path = tmp_path / "best.pt"
    torch.save({"format": "x", "model": RunsCode()}, path)
    result = cli("classify", "--checkpoint", str(path), "a fine film")
    refused(result, "could run code")
    assert "weights_only" not in result.stderr


# --- the unlabelled reviews -------------------------------------------------------------------------


def unsup_folder(toy_dir: Path, folder: Path, content: bytes) -> Path:
    folder.mkdir()
    for name in ("train.jsonl", "test.jsonl"):
        shutil.copy(toy_dir / name, folder / name)
    (folder / "unsup.jsonl.gz").write_bytes(content)
    return folder


def test_unlabelled_files_that_are_damaged_or_empty_are_named(runs: dict, tmp_path: Path) -> None:
    whole = (runs["data"] / "unsup.jsonl.gz").read_bytes()
    truncated = unsup_folder(runs["data"], tmp_path / "truncated", whole[: len(whole) // 2])
    refused(cli(*pretrain_arguments(truncated, tmp_path / "a")), "unsup.jsonl.gz: truncated or damaged gzip")
    empty = unsup_folder(runs["data"], tmp_path / "empty", gzip.compress(b""))
    refused(cli(*gpt_arguments(empty, tmp_path / "b", runs["cache"])), "unsup.jsonl.gz holds no unlabelled")


# --- 10. the Python API -------------------------------------------------------------------------------


SPECIAL = [96, 97, 98, 99]


def test_mask_tokens_refuses_ids_it_cannot_mask_and_keeps_labels_of_small_dtypes() -> None:
    ids = torch.randint(0, 96, (4, 64), generator=torch.Generator().manual_seed(0))
    inputs, labels = mask_tokens(ids.to(torch.uint8), mask_id=99, vocab_size=100, special_ids=SPECIAL,
                                 generator=torch.Generator().manual_seed(1))
    unchosen = labels != -100
    assert labels.dtype == torch.int64 and bool((labels[~unchosen] == -100).all())
    assert bool((labels[unchosen] == ids[unchosen]).all())
    assert inputs.dtype == torch.int64
    cases = [
        dict(ids=ids + 100), dict(ids=ids - 96), dict(ids=ids.bool()), dict(mask_id=100), dict(mask_id=99.0),
        dict(mask_id=True), dict(vocab_size=0), dict(ids=ids.tolist()),
    ]
    for case in cases:
        arguments = {"ids": ids, "mask_id": 99, "vocab_size": 100, "special_ids": SPECIAL, **case}
        with pytest.raises((ValueError, TypeError)):
            mask_tokens(**arguments)


def test_masked_lm_loss_with_nothing_masked_is_zero_not_nan() -> None:
    model = BertForMaskedLM(BertConfig(vocab_size=100, d_model=16, max_len=16, num_layers=1, num_heads=2,
                                       pad_id=96))
    ids = torch.randint(0, 96, (2, 16))
    loss = masked_lm_loss(model, ids, torch.full_like(ids, -100))
    assert loss.item() == 0.0
    loss.backward()  # still a graph: a step on such a batch changes nothing


def test_gpt_inputs_that_are_not_integer_tensors_raise_type_error() -> None:
    model = GPTModel(GPTConfig(vocab_size=50, context_length=8, d_model=8, num_layers=1, num_heads=2))
    for ids in (torch.zeros(1, 4, dtype=torch.uint8), [[1, 2, 3]], np.array([[1, 2, 3]])):
        with pytest.raises(TypeError):
            model(ids)
    with pytest.raises(ValueError):
        generate(model, torch.tensor([[1, 2]]), True)
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="NaN or infinity"):
            next_token_probabilities(torch.tensor([[0.0, bad, 1.0]]))


def test_decode_refuses_ids_that_are_not_integers_and_reads_tensors() -> None:
    tokenizer = BPETokenizer.train("the movie was a movie about a movie", 270)
    ids = tokenizer.encode("the movie")
    assert tokenizer.decode(torch.tensor(ids)) == tokenizer.decode(np.array(ids)) == "the movie"
    for bad in ([1.0], [True]):
        with pytest.raises(ValueError, match="is not in the vocabulary"):
            tokenizer.decode(bad)


# --- Ctrl-C says what can be resumed -----------------------------------------------------------------

INTERRUPTER = '''
import sys
import scratchformer.cli.commands as cli
import scratchformer.train.loop as engine

after = int(sys.argv[1])
check_step = engine.check_step


def interrupted(loss, grad_norm, step, lr):  # every loop's update checks its step here
    check_step(loss, grad_norm, step, lr)
    if step + 1 == after:
        raise KeyboardInterrupt


engine.check_step = interrupted
sys.exit(cli.main(sys.argv[2:]))
'''


@pytest.mark.parametrize("command", ["train-gpt", "pretrain"])
def test_ctrl_c_says_what_can_be_resumed(runs: dict, tmp_path: Path, command: str) -> None:
    import subprocess

    script = tmp_path / "interrupt.py"
    script.write_text(INTERRUPTER)
    out = tmp_path / "run"
    arguments = (gpt_arguments(runs["data"], out, runs["cache"]) if command == "train-gpt"
                 else pretrain_arguments(runs["data"], out))
    late = subprocess.run([sys.executable, str(script), "7", *arguments], capture_output=True, text=True)
    assert late.returncode == 130, late.stderr[-2000:]
    assert "last.pt is intact and holds the run after step" in late.stdout and "--resume" in late.stdout
    shutil.rmtree(out)
    early = subprocess.run([sys.executable, str(script), "1", *arguments], capture_output=True, text=True)
    assert early.returncode == 130, early.stderr[-2000:]
    assert "nothing to resume" in early.stdout


@pytest.mark.parametrize("change", [{"lr": float("nan")}, {"seed": 2**63}, {"steps": 2.5}, {"seed": True}])
def test_gpt_train_config_refuses_what_would_fail_late(change: dict) -> None:
    from scratchformer.train.gpt import GPTTrainConfig

    with pytest.raises(ValueError):
        GPTTrainConfig(**change)
