"""The command a record of `book/results/` shows: as a reader types it at the repository's
root (`command_record` of the package, the record's own path made relative to the root, and
the run folders the tools read shown under `runs/` as the package shows its own paths).

What this deliberately does not handle: records written outside the repository (their
path is shown as given).
"""

from __future__ import annotations

from pathlib import Path

from scratchbook.record import book_root
from scratchformer.runs.folders import command_record, reader_command, reader_path

RUN_OPTIONS = ("--run", "--gpt", "--work", "--selection", "--partial")  # the tools' run folders


def option(words: list[str], name: str) -> str | None:
    """The value of `--name` in a command's words (the last one if given twice)."""
    found = [words[i + 1] for i, word in enumerate(words[:-1]) if word == name]
    return found[-1] if found else None


def set_values(words: list[str]) -> list[str]:
    """The `KEY=VALUE` of each `--set` in a command's words, in order."""
    return [words[i + 1] for i, word in enumerate(words[:-1]) if word == "--set"]


def validation_held_out(words: list[str]) -> str:
    """How a run of these words held out its validation: its last `--set validation=...`,
    else `reviews` (the default)."""
    return ([item.split("=", 1)[1] for item in set_values(words)
             if item.startswith("validation=")] or ["reviews"])[-1]


def shown_path(path: Path) -> str:
    """A file a record names, as it shows it: relative to the repository's root if inside it,
    else resolved."""
    path, root = path.resolve(), book_root()
    return str(path.relative_to(root) if path.is_relative_to(root) else path)


def tool_command(script: str, argv: list[str], record: str | None = None) -> dict[str, str]:
    """`command_record` of `python tools/records/<script> <argv>`, where `record` (where it is
    one of `argv`, not a default) is shown relative to the repository's root if it lies inside
    it, and the folders given to `RUN_OPTIONS` as `reader_path` shows a run's folder."""
    words = ["python", f"tools/records/{script}", *argv]
    if record is not None and record in words:
        words[words.index(record)] = shown_path(Path(record))
    shown, option = [], ""
    for word in words:
        if word.startswith("-"):
            option = word
        elif option in RUN_OPTIONS:  # each value of the option: --gpt takes several
            word = reader_path(option, word)
        shown.append(word)
    return {**command_record(words), "command": reader_command(shown)}
