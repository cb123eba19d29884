"""The command line's argument types and text handling, as the appendix "Running it for
real" of *Transformers from Scratch* describes them: positive counts, seeds, paths,
texts read from arguments or stdin (with where each came from), the `--special-text` option
every command that reads texts shares, and text made safe to print on one line or a terminal.

Written by hand, not exported: the appendix describes it in its section
"The command line" and names this file.

What this module deliberately does not handle: checks of settings and data
(`scratchformer.train.checks`) and of a run's provenance (`scratchformer.runs.provenance`).
"""

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from scratchformer.data.special_text import SPECIAL_TEXT_CHOICES, SPECIAL_TEXTS


def integer(text: str) -> int:
    """`text` as an integer, or the argparse error that says it is not one."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """An argparse type: an integer of at least 0.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    value = integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def seed_int(text: str) -> int:
    """An argparse type: a seed torch takes as it is, in [0, 2**63).

    Described in the appendix "Running it for real", section "Failing safely".
    """
    value = integer(text)
    if not 0 <= value < 1 << 63:
        raise argparse.ArgumentTypeError(f"must be in [0, 2**63), got {value}")
    return value


def user_path(text: str) -> str:
    """An argparse type: a path with `~` expanded, as a shell would for `--out ~/x`; an
    empty one (`--data ""`, an unset variable) is refused, not read as this folder.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    if not text.strip():
        raise argparse.ArgumentTypeError("the path is empty; name a folder or file "
                                         "(. for this folder)")
    return os.path.expanduser(text)


def add_special_text_option(parser: argparse.ArgumentParser, what: str) -> None:
    """Add `--special-text {text,refuse}`, the same in every command that reads texts:
    `what` names the texts it checks.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    parser.add_argument(
        "--special-text", choices=SPECIAL_TEXT_CHOICES, default="text",
        help=f"{what} that write a special token's text ({', '.join(SPECIAL_TEXTS)}): "
        "'text' reads them as plain text (default); 'refuse' stops before anything is "
        "written, naming where the first few are and how many there are")


def command_line_texts(arguments: Sequence[str], stdin: TextIO = sys.stdin) -> list[str]:
    """The texts to classify: the arguments, `-` standing for stdin's lines; none empty.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    return [text for text, _ in command_line_places(arguments, stdin)]


def command_line_places(arguments: Sequence[str],
                        stdin: TextIO = sys.stdin) -> list[tuple[str, str]]:
    """`command_line_texts`, each with where it came from: "argument 2", "stdin line 3".

    Described in the appendix "Running it for real", section "Failing safely".
    """
    texts: list[tuple[str, str]] = []
    for position, argument in enumerate(arguments, start=1):
        if argument == "-":
            lines = stdin_lines(stdin)
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    raise ValueError(f"line {number} of stdin is empty: one text a line")
            texts += [(line, f"stdin line {number}")
                      for number, line in enumerate(lines, start=1)]
        elif not argument.strip():
            raise ValueError("an empty text cannot be classified")
        elif any("\udc80" <= char <= "\udcff" for char in argument):  # undecodable bytes
            raise ValueError(f"argument {len(texts) + 1} is not UTF-8 text; pass it as "
                             "UTF-8, or on stdin with -")
        else:
            texts.append((argument, f"argument {position}"))
    if not texts:
        raise ValueError("no texts to classify: stdin was empty")
    return texts


def stdin_lines(stdin: TextIO) -> list[str]:
    """The lines of `stdin`, cut at `\\n` (or `\\r\\n`) only: a review may hold U+0085,
    U+2028 or a form feed, where `str.splitlines` would cut it too. A UTF-8 byte order
    mark at the start (Windows' editors write one) is dropped.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    raw = stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read().encode()
    try:
        text = raw.decode("utf-8-sig")  # a byte order mark is no part of the first text
    except UnicodeDecodeError as err:
        raise ValueError(f"stdin is not UTF-8 text (byte {err.start})") from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the break that ends the last line
    return [line.removesuffix("\r") for line in lines]


def one_line(text: str) -> str:
    """`text` with line breaks and other control characters escaped: one line of output.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    escape = [c != " " and (c.isspace() or not c.isprintable()) for c in text]
    return "".join(repr(c)[1:-1] if hidden else c for c, hidden in zip(text, escape))


def terminal_text(text: str) -> str:
    """`text` with control characters escaped, line breaks and tabs kept: safe to print.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    kept = "\n\t"
    return "".join(c if c in kept or c.isprintable() or c == " " else repr(c)[1:-1]
                   for c in text)
