"""Chapter 11 and the appendix "Running it for real" ("Failing safely"): runs never lose or fake
a result; bad data, inputs and checkpoints get messages.

Each test makes its own tiny data. The command's logic (what it writes, refuses and says) is
run through its `main` in this process (`support.runs.cli`); what only a process shows (reading
a real stdin, a memory limit, a full disk faked in a wrapper script) runs the installed
`scratchformer` console script or a wrapper in a subprocess.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import scratchformer.io.files as files
import scratchformer.data.framing as framing
import scratchformer.data.imdb as imdb
import scratchformer.runs.checkpoint as checkpoints
import scratchformer.train.engine as engine
import scratchformer.train.loop as train
from scratchformer.data.framing import encode_review
from scratchformer.data.imdb import ReviewSplit, load_imdb
from scratchformer.data.review_cache import encode_reviews, review_tokens
from scratchformer.models.bert import BertForSequenceClassification
from scratchformer.tokenize.bpe import BPETokenizer
from support.runs import cli, dead_pid, installed_cli, refused, timeless, tiny
from support.toy import tiny_config, toy_loaders, toy_reviews, write_jsonl

# --- data -------------------------------------------------------------------------------------


def test_a_truncated_gzip_file_is_named(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "train.jsonl.gz", toy_reviews(200, seed=1))
    write_jsonl(tmp_path / "test.jsonl", toy_reviews(4, seed=2))
    data = (tmp_path / "train.jsonl.gz").read_bytes()
    (tmp_path / "train.jsonl.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"train\.jsonl\.gz: truncated or damaged gzip file"):
        load_imdb(tmp_path)


def test_plain_text_named_gz_is_named(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "train.jsonl", toy_reviews(4, seed=1))
    (tmp_path / "train.jsonl").rename(tmp_path / "train.jsonl.gz")
    write_jsonl(tmp_path / "test.jsonl", toy_reviews(4, seed=2))
    with pytest.raises(ValueError, match=r"train\.jsonl\.gz: named \.gz but not gzip-compressed"):
        load_imdb(tmp_path)


def test_text_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "train.jsonl", toy_reviews(4, seed=1))
    (tmp_path / "test.jsonl").write_bytes(b'{"text": "fine", "label": 1}\n{"text": "caf\xe9", "label": 0}\n')
    with pytest.raises(ValueError, match=r"test\.jsonl: not UTF-8 text after line \d"):
        load_imdb(tmp_path)
    with gzip.open(tmp_path / "test.jsonl.gz", "wb") as handle:
        handle.write(b'{"text": "caf\xe9", "label": 0}\n')
    (tmp_path / "test.jsonl").unlink()
    with pytest.raises(ValueError, match=r"test\.jsonl\.gz: not UTF-8 text"):
        load_imdb(tmp_path)
    for split in ("train", "test"):
        for name in ("neg", "pos"):
            (tmp_path / "aclImdb" / split / name).mkdir(parents=True)
            (tmp_path / "aclImdb" / split / name / "0_1.txt").write_text("fine")
    (tmp_path / "aclImdb" / "test" / "pos" / "1_9.txt").write_bytes(b"Latin-1: caf\xe9")
    with pytest.raises(ValueError, match=r"1_9\.txt: not UTF-8 text"):
        load_imdb(tmp_path)


def test_only_the_splits_asked_for_are_read(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "train.jsonl", toy_reviews(6, seed=1))
    assert list(load_imdb(tmp_path, splits=("train",))) == ["train"]
    (tmp_path / "test.jsonl").write_bytes(b"\xff damaged")
    assert len(load_imdb(tmp_path, splits=["train"])["train"]) == 6
    with pytest.raises(ValueError, match="splits must name"):
        load_imdb(tmp_path, splits=("validation",))


def test_an_empty_split_encodes_to_no_rows(tmp_path: Path) -> None:
    ids, labels = encode_reviews(ReviewSplit([], []), 16, cache_dir=tmp_path)
    assert ids.shape == (0, 16) and labels.shape == (0,)
    again, _ = encode_reviews(ReviewSplit([], []), 16, cache_dir=tmp_path)  # now from the cache
    assert again.shape == (0, 16)


def test_a_million_spaces_do_not_crash_the_tokenizer(tmp_path: Path) -> None:
    # tiktoken's regex engine panics (a Rust panic, not an exception) near a million.
    long = "Great film." + " " * 1_100_000 + "Loved it.\n" + "\t" * 200_000 + "<|endoftext|> ok"
    ids, _ = encode_reviews(ReviewSplit([long, "Dull."], [1, 0]), 12, "head", tmp_path)
    expected = BPETokenizer.from_gpt2().encode_ordinary(framing.clean_review(long))
    assert [t.tolist() for t in review_tokens(ReviewSplit([long, "Dull."], [1, 0]), tmp_path)][0] == expected
    assert ids[0].tolist() == framing.frame_tokens(expected, 12, "head") == encode_review(long, 12, "head")
    assert ids[1].tolist() == encode_review("Dull.", 12, "head")


# --- the command line, run as a user runs it ----------------------------------------------------

NO_NAN = {"parse_constant": lambda name: pytest.fail(f"results.json holds {name}: not strict JSON")}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cli-imdb")
    write_jsonl(folder / "train.jsonl", toy_reviews(48, seed=1))
    write_jsonl(folder / "test.jsonl", toy_reviews(16, seed=2))
    return folder


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("token-cache")


def fingerprint(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def test_a_folder_holds_one_run(tmp_path: Path, cache_dir: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    reviews = toy_reviews(48, seed=1)
    # One review of a million spaces: tiktoken alone would panic and end the process.
    texts = [reviews.texts[0] + " " * 1_100_000 + "the end", *reviews.texts[1:]]
    write_jsonl(data / "train.jsonl", ReviewSplit(texts, reviews.labels))
    write_jsonl(data / "test.jsonl", toy_reviews(16, seed=2))
    out = tmp_path / "run"
    first = cli(*tiny(data, out, cache_dir, "--epochs", "1"))
    assert first.returncode == 0, first.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["best.pt", "last.pt", "results.json"], "no lock left"
    json.loads((out / "results.json").read_text(), **NO_NAN)
    before = fingerprint(out)

    refused(cli(*tiny(data, out, cache_dir, "--epochs", "1")), "already holds a run", "--resume", "--overwrite")
    assert fingerprint(out) == before, "a refused run changes nothing"
    refused(cli(*tiny(data, out, cache_dir, "--resume", "--overwrite")), "not allowed with")

    # Replacing a run that then fails puts the old run back as it was, and mixes no files.
    diverged = cli(*tiny(data, out, cache_dir, "--overwrite", "--set", "lr=1e10"))
    refused(diverged, "diverged at step", "lower learning rate")
    assert "holds the run it was to replace again, as it was" in diverged.stdout + diverged.stderr
    assert fingerprint(out) == before and sorted(os.listdir(out)) == ["best.pt", "last.pt", "results.json"]
    again = cli(*tiny(data, out, cache_dir, "--overwrite", "--epochs", "1"))
    assert again.returncode == 0, again.stderr[-3000:]
    assert timeless(json.loads((out / "results.json").read_text())) == timeless(json.loads(before["results.json"]))


def write_lock(out: Path, pid: int, host: str) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / ".lock").write_text(json.dumps({"pid": pid, "host": host, "since": "2026-01-01 00:00:00"}))
    return out / ".lock"


def test_a_locked_folder_is_refused_and_a_dead_runs_lock_is_cleared(tmp_path: Path, data_dir: Path,
                                                                    cache_dir: Path) -> None:
    live = write_lock(tmp_path / "live", os.getpid(), files.this_host())
    refused(cli(*tiny(data_dir, live.parent, cache_dir)), f"in use by another run (process {os.getpid()}")
    pid = dead_pid()
    stale = write_lock(tmp_path / "stale", pid, files.this_host())
    cleared = cli(*tiny(data_dir, stale.parent, cache_dir, "--epochs", "1", "--no-test"))
    assert cleared.returncode == 0, cleared.stderr[-3000:]
    assert f"cleared {stale}: process {pid} on {files.this_host()}, which held it since 2026-01-01 00:00:00, " \
           "is no longer running" in cleared.stdout
    assert not stale.exists() and (stale.parent / "results.json").is_file(), "the run took the folder, and ended"
    elsewhere = write_lock(tmp_path / "elsewhere", pid, "another-machine")
    refused(cli(*tiny(data_dir, elsewhere.parent, cache_dir)), "in use by another run", "another-machine")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / ".lock").write_text("")
    refused(cli(*tiny(data_dir, tmp_path / "empty", cache_dir)), "names no owner")


@pytest.mark.parametrize("setting", ["lr=1e10", "lr=inf", "grad_clip=nan", "weight_decay=nan", "warmup=nan"])
def test_non_finite_or_diverging_settings_fail_and_save_nothing(tmp_path: Path, data_dir: Path, cache_dir: Path,
                                                                setting: str) -> None:
    out = tmp_path / "run"
    result = cli(*tiny(data_dir, out, cache_dir, "--set", setting))
    if setting == "lr=1e10":
        refused(result, "diverged at step", "was not applied", "lower learning rate")
    else:
        refused(result, f"{setting.split('=')[0]} must be a finite number")
    assert not (out / "results.json").exists() and not (out / "last.pt").exists()


def test_non_finite_values_are_refused_in_python(tmp_path: Path) -> None:
    for changes in ({"lr": math.nan}, {"lr": math.inf}, {"grad_clip": math.nan}, {"weight_decay": -math.inf},
                    {"warmup": math.nan}, {"epochs": 2.5}, {"seed": "0"}):
        with pytest.raises(ValueError, match="must be"):
            engine.TrainConfig(**changes)
    with pytest.raises(ValueError, match="dropout"):
        tiny_config(dropout=math.nan)
    model = BertForSequenceClassification(tiny_config())
    with torch.no_grad():
        model.classifier.weight[0, 0] = math.nan
    with pytest.raises(train.TrainingDiverged, match=r"refusing to write .*x\.pt.*classifier\.weight"):
        checkpoints.save_checkpoint(tmp_path / "x.pt", model, model.config)
    assert not (tmp_path / "x.pt").exists()


def test_training_stops_at_the_first_non_finite_step_with_finite_weights(tmp_path: Path, device: torch.device) -> None:
    torch.manual_seed(0)
    model = BertForSequenceClassification(tiny_config(pooling="mean")).to(device)
    fit, val = toy_loaders(tmp_path / "cache")
    config = engine.TrainConfig(epochs=3, batch_size=16, lr=1e10, warmup=0.0, val_size=16)
    with pytest.raises(train.TrainingDiverged, match=r"diverged at step \d+ \(lr 1e\+10\)"):
        engine.train(model, fit, val, config, tmp_path / "run", progress=False, log=lambda message: None)
    assert all(torch.isfinite(p).all() for p in model.parameters()), "the bad step was not applied"
    for path in (tmp_path / "run").glob("*.pt"):
        assert all(torch.isfinite(t).all() for t in torch.load(path, weights_only=True)["model"].values()
                   if t.is_floating_point())


def test_resume_refuses_other_data_and_a_best_checkpoint(tmp_path: Path, data_dir: Path, cache_dir: Path) -> None:
    out = tmp_path / "run"
    first = cli(*tiny(data_dir, out, cache_dir, "--limit", "40", "--no-test", "--epochs", "2", "--set",
                      "evals_per_epoch=1"))
    assert first.returncode == 0, first.stderr[-3000:]
    state = torch.load(out / "last.pt", weights_only=True)["training"]
    assert state["data"]["batches per epoch"] == 4 and state["data"]["steps in all"] == 8
    before = fingerprint(out)
    refused(cli(*tiny(data_dir, out, cache_dir, "--limit", "32", "--no-test", "--epochs", "2", "--set",
                      "evals_per_epoch=1", "--resume")),
            "cannot resume", "training reviews", "batches per epoch 4 then, 3 now")
    assert fingerprint(out) == before
    (out / "last.pt").write_bytes((out / "best.pt").read_bytes())
    refused(cli(*tiny(data_dir, out, cache_dir, "--limit", "40", "--no-test", "--epochs", "2", "--set",
                      "evals_per_epoch=1", "--resume")), "holds no training state to resume from")
    empty = tmp_path / "empty"
    refused(cli(*tiny(data_dir, empty, cache_dir, "--resume")), "nothing to resume")


@pytest.mark.parametrize(
    ("arguments", "phrases"),
    [
        (["--epochs", "0"], ["--epochs: must be at least 1, got 0"]),
        (["--limit", "0"], ["--limit: must be at least 1, got 0"]),
        (["--limit", "-390"], ["--limit: must be at least 1, got -390"]),
        (["--threads", "zero"], ["--threads: 'zero' is not an integer"]),
        (["--set", "pad_id=0"], ["pads with id 50257", "pad_id must be 50257"]),
        (["--set", "vocab_size=50259"], ["vocab_size at least 50260"]),
        (["--set", "__class__=x"], ["KEY a field of BertConfig or TrainConfig"]),
        (["--set", "__doc__=x"], ["KEY a field of BertConfig or TrainConfig"]),
        (["--set", "epochs=2.5"], ["'2.5' is not a valid int"]),
        (["--device", "cuda:7"], ["--device cuda:7: no cuda:7 here", "--device cpu or auto"]),
        (["--device", "gpu"], ["--device 'gpu'"]),
    ],
)
def test_settings_the_pipeline_cannot_honour_are_refused(tmp_path: Path, data_dir: Path, cache_dir: Path,
                                                         arguments: list[str], phrases: list[str]) -> None:
    if arguments[0] == "--device" and torch.cuda.device_count() > 7:
        pytest.skip("this machine has a cuda:7")
    base = tiny(data_dir, tmp_path / "run", cache_dir)
    base = [a for i, a in enumerate(base) if a != "cpu" and base[i - 1 : i] != ["--device"] or i == 0]
    base = [a for a in base if a != "--device"]
    result = cli(*base, *arguments)
    refused(result, *phrases)
    assert not (tmp_path / "run").exists() or not os.listdir(tmp_path / "run")


def test_cuda_without_cuda_is_refused(tmp_path: Path, data_dir: Path, cache_dir: Path) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    base = [a for a in tiny(data_dir, tmp_path / "run", cache_dir) if a not in ("--device", "cpu")]
    refused(cli(*base, "--device", "cuda"), "--device cuda: no cuda:0 here", "--device cpu")


def test_what_would_fail_after_training_fails_before(tmp_path: Path, cache_dir: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    write_jsonl(data / "train.jsonl", toy_reviews(48, seed=1))
    (data / "test.jsonl").write_text("")
    refused(cli(*tiny(data, tmp_path / "run", cache_dir)), "the test split", "holds no reviews")
    assert not (tmp_path / "run" / "best.pt").exists()
    (tmp_path / "file").write_text("not a folder")
    refused(cli(*tiny(data, tmp_path / "file", cache_dir, "--no-test")), "is a file, not a folder")
    refused(cli(*tiny(data, tmp_path / "file" / "run", cache_dir, "--no-test")), "cannot create the folder")
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "read-only"
        locked.mkdir(mode=0o500)
        refused(cli(*tiny(data, locked, cache_dir, "--no-test")), "cannot write in")


def test_damaged_data_files_are_named_by_the_command(tmp_path: Path, cache_dir: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    write_jsonl(data / "test.jsonl", toy_reviews(8, seed=2))
    write_jsonl(data / "train.jsonl.gz", toy_reviews(300, seed=1))
    whole = (data / "train.jsonl.gz").read_bytes()
    (data / "train.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    refused(cli(*tiny(data, tmp_path / "a", cache_dir)), "train.jsonl.gz: truncated or damaged gzip file")
    (data / "train.jsonl.gz").write_text('{"text": "plain", "label": 1}\n')
    refused(cli(*tiny(data, tmp_path / "b", cache_dir)), "train.jsonl.gz: named .gz but not gzip-compressed")
    (data / "train.jsonl.gz").unlink()
    (data / "train.jsonl").write_bytes(b'{"text": "caf\xe9", "label": 1}\n')
    refused(cli(*tiny(data, tmp_path / "c", cache_dir)), "train.jsonl: not UTF-8 text")


def test_no_test_needs_no_test_file_and_out_expands_the_home_folder(tmp_path: Path, cache_dir: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    write_jsonl(data / "train.jsonl", toy_reviews(48, seed=1))
    home = tmp_path / "home"
    home.mkdir()
    args = tiny(data, Path("~/runs/x"), cache_dir, "--no-test", "--epochs", "1")
    args[args.index("--out") : args.index("--out") + 2] = ["--out=~/runs/x"]
    result = cli(*args, env={"HOME": str(home)}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (home / "runs" / "x" / "best.pt").is_file() and not (tmp_path / "~").exists()
    assert json.loads((home / "runs" / "x" / "results.json").read_text(), **NO_NAN)["test"] is None


def test_a_full_disk_is_named(tmp_path: Path, data_dir: Path, cache_dir: Path) -> None:
    # torch.save reports a full disk as a RuntimeError from its zip writer; fake that.
    wrapper = tmp_path / "full_disk.py"
    wrapper.write_text(
        "import sys, torch\n"
        "from scratchformer.cli import commands as cli\n"
        "def save(*args, **kwargs):\n"
        "    raise RuntimeError('[enforce fail at inline_container.cc:672] . PytorchStreamWriter failed writing "
        "file data/0: file write failed')\n"
        "torch.save = save\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    out = tmp_path / "run"
    result = subprocess.run([sys.executable, str(wrapper), *tiny(data_dir, out, cache_dir)], capture_output=True,
                            text=True, timeout=600)
    refused(result, f"could not write {out / 'best.pt'}: is the disk full?", "inline_container")
    assert not out.exists(), "no temporary file, no lock and no empty folder left behind"


# --- checkpoints -----------------------------------------------------------------------------------


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    torch.manual_seed(0)
    model = BertForSequenceClassification(tiny_config(pooling="mean"))
    checkpoints.save_checkpoint(tmp_path / "model.pt", model, model.config)
    return tmp_path / "model.pt"


def altered(checkpoint: Path, change) -> Path:
    payload = torch.load(checkpoint, weights_only=True)
    change(payload)
    path = checkpoint.with_name("altered.pt")
    torch.save(payload, path)
    return path


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        (lambda p: p.pop("config"), "field 'config' is missing or not a dict"),
        (lambda p: p.update(config="d_model=16"), "field 'config' is missing or not a dict (it is str)"),
        (lambda p: p.update(num_classes="2"), "field 'num_classes' is missing or not a int"),
        (lambda p: p.pop("model"), "field 'model' is missing"),
        (lambda p: p.update(truncation="tail"), "'truncation' or 'training' is not as saved"),
        (lambda p: p["config"].update(colour="blue"), "its model configuration is invalid"),
        (lambda p: p["config"].update(num_heads=3), "its model configuration is invalid"),
        (lambda p: p["model"].pop("classifier.bias"), "classifier.bias missing"),
        (lambda p: p["model"].update(extra=torch.zeros(1)), "extra unexpected"),
    ],
)
def test_checkpoints_with_bad_fields_are_refused_by_classify(checkpoint: Path, change, phrase: str) -> None:
    refused(cli("classify", "--checkpoint", str(altered(checkpoint, change)), "a fine film"), phrase)


def test_a_checkpoint_whose_vocabulary_would_fill_memory_is_refused_before_allocating(checkpoint: Path) -> None:
    path = altered(checkpoint, lambda p: p["config"].update(vocab_size=100_000_000))
    limit = 3 << 30  # 3 GiB of address space: enough for torch, far from the 25 GB a 1e8 vocabulary wants

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    refused(installed_cli("classify", "--checkpoint", str(path), "a fine film", preexec_fn=bounded),
            "encoder.embedding.token.lookup.weight is (50260, 16), the configuration says (100000000, 16)")


def test_classify_reads_stdin_refuses_empty_texts_and_keeps_one_line_per_text(checkpoint: Path) -> None:
    result = installed_cli("classify", "--checkpoint", str(checkpoint), "first", "-", "last",
                           stdin="great movie\nawful plot\r\nthird one\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    texts = [re.fullmatch(r"(?:negative|positive) +\d\.\d{3}  (.*)", line)[1] for line in lines]
    assert texts == ["first", "great movie", "awful plot", "third one", "last"]
    result = cli("classify", "--checkpoint", str(checkpoint), "--json", "-", stdin="one\ntwo\n")
    assert [row["text"] for row in json.loads(result.stdout)] == ["one", "two"]
    multi = cli("classify", "--checkpoint", str(checkpoint), "line one\nline two\u2028three\x07")
    assert multi.returncode == 0 and len(multi.stdout.splitlines()) == 1
    assert multi.stdout.rstrip("\n").endswith("line one\\nline two\\u2028three\\x07")
    refused(cli("classify", "--checkpoint", str(checkpoint), ""), "an empty text cannot be classified")
    refused(cli("classify", "--checkpoint", str(checkpoint), "-", stdin="one\n\nthree\n"), "line 2 of stdin is empty")
    refused(cli("classify", "--checkpoint", str(checkpoint), "-", stdin=""), "no texts to classify")


def test_classify_texts_takes_a_str_as_one_text(checkpoint: Path) -> None:
    model = checkpoints.load_checkpoint(checkpoint)
    (one,) = train.classify_texts(model, "great movie")
    assert one == train.classify_texts(model, ["great movie"])[0]


def test_a_byte_order_mark_on_stdin_is_no_part_of_the_first_text(checkpoint: Path) -> None:
    plain = cli("classify", "--checkpoint", str(checkpoint), "--json", "-", stdin="a dull film\nfine\n")
    marked = cli("classify", "--checkpoint", str(checkpoint), "--json", "-", stdin="\ufeffa dull film\nfine\n")
    assert marked.returncode == 0, marked.stderr
    assert json.loads(marked.stdout) == json.loads(plain.stdout), "the same texts, the same verdicts"
