"""The package as the chapters generate it: does every module import, are its names defined?

Undefined names (pyflakes) in src/, tests/, benchmarks/, scratchbook/ and tools/, and imports from the package of names
it does not define, each generated line followed by its chapter line.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from book.cells import PACKAGE
from book.chapter_lint import ChapterCode, chapter_code, undefined_names, uses_of_missing_imports
from book.chapter_lint import package_imports as chapter_imports
from book.render import origins
from book.where import with_chapter_lines


CHECKED_FOLDERS = ("src", "tests", "benchmarks", "scratchbook", "tools")


UNDEFINED = ("UndefinedName", "UndefinedLocal", "UndefinedExport")


IMPORT_PROBE = r"""
import importlib, json, os, pkgutil, sys, traceback
from pathlib import Path
package, given = sys.argv[1], json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))
wanted = given["wanted"]
problems, imported, failed = [], {}, {}
top = importlib.import_module(package)
if not all(path.startswith(os.environ["PYTHONPATH"]) for path in top.__path__):
    sys.exit(f"{package} was imported from {list(top.__path__)}, not from the copy being checked")
names = [package] + sorted(m.name for m in pkgutil.walk_packages(top.__path__, package + "."))
for name in names:
    try:
        imported[name] = importlib.import_module(name)
    except BaseException as err:
        frames = [f for f in traceback.extract_tb(err.__traceback__) if "/src/" + package + "/" in f.filename]
        where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else name
        failed.setdefault(f"{where}: {type(err).__name__}: {err}", []).append(name)
for message, modules in failed.items():
    where, error = message.split(": ", 1)
    problems.append(f"{where}: importing {', '.join(modules)} fails: {error}")
broken = {name for modules in failed.values() for name in modules}
for module in {module for _, module, _ in wanted} - set(imported) - broken:
    try:
        imported[module] = importlib.import_module(module)
    except ImportError:
        pass
for where, module, name in wanted:
    if module in imported and not hasattr(imported[module], name) and f"{module}.{name}" not in imported:
        problems.append(f"{where}: imports '{name}' from {module}, which does not define it")
    elif module not in imported and module not in broken and module.split(".")[0] == package:
        problems.append(f"{where}: imports '{name}' from {module}, which is not a module of the package "
                        "(it does not define it)")
print(json.dumps(problems))
"""


def package_imports(tree: ast.Module, rel: str) -> list[tuple[str, str, str]]:
    """(where, module, name) for each `from scratchformer... import name` in the file `rel`."""
    found = []
    package = rel.removeprefix("src/").removesuffix(".py").replace("/", ".").rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        module = node.module or ""
        if node.level:
            if not rel.startswith(f"src/{PACKAGE}/"):
                continue
            base = package.split(".")
            base = base[:len(base) - node.level + 1]
            module = ".".join([*base, module] if module else base)
        if module.split(".")[0] != PACKAGE:
            continue
        for alias in node.names:
            if alias.name != "*":
                found.append((f"{rel}:{node.lineno}", module, alias.name))
    return found


def undefined_in(trees: list[tuple[str, ast.Module | str]], codes: dict[str, ChapterCode],
                 generated: dict[Path, str]) -> list[str]:
    """pyflakes' undefined names in each file's syntax tree, file by file (or why a file has no
    tree: a syntax error, text that is not UTF-8), then in the chapters' code cells (`codes`),
    where the names the `generated` modules define count as defined."""
    try:
        from pyflakes import checker
    except ImportError:
        return ["pyflakes is not installed, so names were not checked: run `make venv`"]
    problems = []
    for rel, tree in trees:
        if isinstance(tree, str):
            problems.append(tree)
            continue
        for message in sorted(checker.Checker(tree, filename=rel).messages, key=lambda m: m.lineno):
            if type(message).__name__ in UNDEFINED:
                problems.append(f"{message.filename}:{message.lineno}: {message.message % message.message_args}")
    defined = {name for text in generated.values() if text for name in top_level_names(text)}
    for found in codes.values():
        problems += found.problems + undefined_names(found, defined)
    return problems


def top_level_names(text: str) -> set[str]:
    """The names a module's text defines at its top level."""
    names = set()
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def package_problems(root: Path, wanted: dict[Path, str], chapters: list[str] | None = None) -> list[str]:
    """Undefined names (pyflakes) in `CHECKED_FOLDERS`, and the package's failing imports.

    The generated modules are checked as the chapters generate them (`wanted`), not as src/
    holds them, in a copy of src/; every line of a generated module is followed by the chapter
    line it comes from. The code cells of `chapters` are checked too (`book.chapter_lint`).
    """
    problems: list[str] = []
    codes = {chapter: chapter_code(root, chapter) for chapter in chapters or []}
    with tempfile.TemporaryDirectory(prefix="export-check-") as tmp:
        copy = Path(tmp) / "src"
        if (root / "src").is_dir():
            shutil.copytree(root / "src", copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        for path, text in wanted.items():
            target = copy / path.relative_to(root / "src")
            if text:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
            elif target.exists():
                target.unlink()
        init = copy / PACKAGE / "__init__.py"
        if not init.exists():  # a scratch book's package: a namespace package would import from elsewhere
            init.parent.mkdir(parents=True, exist_ok=True)
            init.write_text("")
        files: list[tuple[str, Path]] = [
            (f"src/{path.relative_to(copy).as_posix()}", path) for path in sorted(copy.rglob("*.py"))]
        for folder in CHECKED_FOLDERS[1:]:
            files += [(path.relative_to(root).as_posix(), path) for path in sorted((root / folder).rglob("*.py"))
                      if "__pycache__" not in path.parts]
        trees: list[tuple[str, ast.Module | str]] = []  # each file's syntax tree, or why it has none
        for rel, path in files:
            try:
                trees.append((rel, ast.parse(path.read_text(encoding="utf-8"), filename=rel)))
            except SyntaxError as err:
                trees.append((rel, f"{rel}:{err.lineno}: {err.args[0]}"))
            except (UnicodeDecodeError, ValueError):
                trees.append((rel, f"{rel}: problem decoding source"))
        imports = [item for rel, tree in trees if not isinstance(tree, str) for item in package_imports(tree, rel)]
        imports += [item for found in codes.values() for item in chapter_imports(found)]
        wanted_imports = Path(tmp) / "wanted.json"
        wanted_imports.write_text(json.dumps({"wanted": imports}), encoding="utf-8")
        # The package is imported in a process of its own while pyflakes reads the files (each
        # takes seconds; on two cores, side by side).
        probe = subprocess.Popen(
            [sys.executable, "-c", IMPORT_PROBE, PACKAGE, str(wanted_imports)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp,
            env={**os.environ, "PYTHONPATH": str(copy.resolve())},
        )
        try:
            problems += undefined_in(trees, codes, wanted)
        except BaseException:
            probe.kill()
            raise
        stdout, stderr = probe.communicate()
        try:
            found = json.loads(stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            found = [f"importing {PACKAGE} fails: {stderr.strip()[-2000:]}"]
        problems += [line.replace(str(copy) + "/", "src/") for line in found]
    problems += uses_of_missing_imports(codes, problems)
    if not any(f"src/{PACKAGE}/" in line for line in problems):
        return problems
    lines = origins(root)
    mapped = [with_chapter_lines(root, line, lines) for line in problems]
    # An exported cell's undefined name is named once, as the generated line with its chapter line.
    seen = {f"{m.group(1)}: {m.group(2)}" for line in mapped
            if (m := re.match(r"src/\S+ \[(\S+)\]: (.*)$", line))}
    return [line for line in mapped if line not in seen]
