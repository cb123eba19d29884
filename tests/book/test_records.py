"""The appendix "Running it for real": results files show commands a reader can type, and keep
the machine's for provenance."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from conftest import ROOT
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
