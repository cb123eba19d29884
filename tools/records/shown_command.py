"""The command a record of `book/results/` shows: as a reader types it at the repository's
root (`command_record` of the package, and the record's own path made relative to the root).

What this deliberately does not handle: records written outside the repository (their
path is shown as given).
"""

from __future__ import annotations

from pathlib import Path

from scratchformer.runs.folders import command_record

ROOT = Path(__file__).resolve().parents[2]


def tool_command(script: str, argv: list[str], record: str) -> dict[str, str]:
    """`command_record` of `python tools/records/<script> <argv>`, where `record` (where it is
    one of `argv`, not a default) is shown relative to the repository's root if it lies inside it."""
    words = ["python", f"tools/records/{script}", *argv]
    path = Path(record).resolve()
    if path.is_relative_to(ROOT) and record in words:
        words[words.index(record)] = str(path.relative_to(ROOT))
    return command_record(words)
