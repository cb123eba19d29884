"""The appendix "Running it for real": results files show commands a reader can type, and keep
the machine's for provenance."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from support import ROOT
from scratchformer.runs.folders import command_record, reader_command

MACHINE_PATH = re.compile(r"(^|[\s=])(/|\.\./)")


@pytest.mark.parametrize(
    ("ran", "shown"),
    [
        ("scratchformer train-imdb --data ../shared/data/imdb --out runs/cpu --cache /srv/x/runs/cache",
         "scratchformer train-imdb --data $IMDB_DIR --out runs/cpu --cache runs/cache"),
        ("scratchformer train-imdb --data=/data/imdb --init /a/b/runs/mlm/snapshot-0000100.pt --epochs 1",
         "scratchformer train-imdb --data=$IMDB_DIR --init runs/mlm/snapshot-0000100.pt --epochs 1"),
        ("python benchmarks/tokenizer.py --data /data/imdb/train.jsonl.gz --record book/results/t.json",
         "python benchmarks/tokenizer.py --data $IMDB_DIR/train.jsonl.gz --record book/results/t.json"),
        ("python tools/records/ch13_record_pretraining.py --runs /home/me/pt/runs", "python tools/records/ch13_record_pretraining.py --runs runs"),
        ("scratchformer classify --checkpoint /tmp/best 'a film, not bad'",
         "scratchformer classify --checkpoint runs/best 'a film, not bad'"),
        ("scratchformer train-imdb --data '/my data/imdb' --out 'runs/with space'",
         "scratchformer train-imdb --data $IMDB_DIR --out 'runs/with space'"),
    ],
)
def test_a_recorded_command_is_shown_as_a_reader_types_it(ran: str, shown: str) -> None:
    assert reader_command(shlex.split(ran)) == shown
    assert command_record(shlex.split(ran)) == {"command": shown, "command_as_run": shlex.join(shlex.split(ran))}


def commands(record: object) -> list[str]:
    """Every string under a `command` or `commands` key, anywhere in a results file."""
    if isinstance(record, dict):
        found = [v for k, v in record.items() if k == "command" and isinstance(v, str)]
        found += [c for k, v in record.items() if k == "commands" for c in v]
        return found + [c for v in record.values() for c in commands(v)]
    if isinstance(record, list):
        return [c for v in record for c in commands(v)]
    return []


RESULTS = sorted((ROOT / "book" / "results").rglob("*.json"))


@pytest.mark.parametrize("path", RESULTS, ids=[p.relative_to(ROOT / "book" / "results").as_posix() for p in RESULTS])
def test_recorded_commands_name_no_path_of_the_machine_that_ran_them(path: Path) -> None:
    shown = commands(json.loads(path.read_text(encoding="utf-8")))
    assert shown, f"{path.name} records no command"
    bad = [c for c in shown if MACHINE_PATH.search(c.replace("$IMDB_DIR/", "").replace("$IMDB_DIR", ""))]
    assert not bad, f"{path.name} shows machine paths: {bad[:2]}"


def test_every_file_of_the_results_folder_is_one_record(tmp_path: Path) -> None:
    """Each file of book/results/ is a Record of `scratchbook.records` (the log of `make
    gpu-check` aside), reads with its fields checked, and writes back byte for byte: a script
    that writes its record again through it changes no byte it need not."""
    from scratchbook.records import RECORDS, tuning_records

    records = {record.name: record for record in (*RECORDS, *tuning_records().values())}
    files = {path.relative_to(ROOT / "book" / "results").as_posix()
             for path in (ROOT / "book" / "results").rglob("*") if path.is_file()}
    assert files - set(records) == {name for name in files if name.startswith("gpu_check_")}
    assert set(records) <= files, f"records with no file: {set(records) - files}"
    for name, record in records.items():
        copy = tmp_path / name.replace("/", "_")
        record.write(record.read(), copy)
        assert copy.read_bytes() == record.path.read_bytes(), f"{name} is not written back as it was"


def test_a_record_refuses_what_its_readers_cannot_use(tmp_path: Path) -> None:
    from scratchbook.record import Record, RecordError

    record = Record("run.json", "tools/records/run.py", {"command": "text", "runs.*.accuracy": "fraction"})
    path = tmp_path / "run.json"
    with pytest.raises(RecordError, match="does not exist: write it with tools/records/run.py"):
        record.read(path)
    path.write_text("{")
    with pytest.raises(RecordError, match="is not JSON"):
        record.read(path)
    with pytest.raises(RecordError, match=r"runs.1.accuracy is 87.2, not a fraction from 0 to 1"):
        record.write({"command": "x", "runs": {"0": {"accuracy": 0.9}, "1": {"accuracy": 87.2}}}, path)
    assert path.read_text() == "{", "a refused record leaves the old file as it was"
    with pytest.raises(RecordError, match="no 'command' under the top level"):
        record.check({"runs": {}}, path)
    record.write({"command": "x", "runs": {"0": {"accuracy": 0.9}}}, path)
    assert record.read(path)["runs"]["0"]["accuracy"] == 0.9
    assert record.read(tmp_path)["command"] == "x", "a folder holds the record under its name"
    with pytest.raises(ValueError, match="unknown field kinds"):
        Record("x.json", "y", {"command": "string"})
