"""The package's layers: its imports run one way, down (part of `book.conventions`).

A module may import its own sub-package and the layers below its own, never one beside or
above it, and no modules import each other in a circle (DESIGN.md, "the package's imports run
one way"). Imports at any depth count: a function's deferred import as much as one at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

# The package's layers, bottom first.
LAYERS = [{"io"}, {"tokenize", "nn"}, {"data"}, {"models"}, {"runs"}, {"measure"}, {"train"},
          {"web"}, {"cli"}]
# The one module beside the layers: the package's door (`__init__`, its version only).
OUTSIDE_LAYERS = {"scratchformer"}


def package_imports(root: Path) -> dict[str, set[str]]:
    """Each module of the package -> the package modules it imports."""
    package = root / "src" / "scratchformer"

    def module_of(path: Path) -> str:
        parts = path.relative_to(package.parent).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    modules = {module_of(path): path for path in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph[name] = set()
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except SyntaxError:  # the package check names it
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def layer_of(module: str) -> int | None:
    package = module.split(".")[1] if module.count(".") else ""
    return next((i for i, layer in enumerate(LAYERS) if package in layer), None)


def module_files(root: Path) -> dict[str, str]:
    """Each module of the package -> its file, relative to the root."""
    package = root / "src" / "scratchformer"
    found = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path.relative_to(root).as_posix()
    return found


def layer_problems(root: Path) -> list[str]:
    """Modules in no layer, and imports that run up or sideways between layers."""
    graph = package_imports(root)
    files = module_files(root)
    problems = [f"{files[m]}: {m} is in no layer of the package. Fix: put it in a sub-package of a layer, or "
                "add its folder to LAYERS in tools/book/layers.py"
                for m in sorted(graph) if m not in OUTSIDE_LAYERS and layer_of(m) is None]
    for module, targets in sorted(graph.items()):
        if module in OUTSIDE_LAYERS or layer_of(module) is None:
            continue
        for target in sorted(targets):
            same_package = target.split(".")[:2] == module.split(".")[:2]
            if target in OUTSIDE_LAYERS or same_package:
                continue
            if layer_of(target) >= layer_of(module):
                problems.append(f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)}) "
                                "(rule: a module imports only its own sub-package and the layers below). Fix: "
                                "move what it needs down a layer, or the importing code up")
    return problems


def import_circles(root: Path) -> list[str]:
    """The first circle of modules that import each other, if any."""
    graph = {m: targets - OUTSIDE_LAYERS for m, targets in package_imports(root).items() if m not in OUTSIDE_LAYERS}

    def circle_from(start: str, path: list[str]) -> list[str] | None:
        for following in sorted(graph[path[-1]]):
            if following == start:
                return [*path, start]
            if following not in path:
                found = circle_from(start, [*path, following])
                if found:
                    return found
        return None

    for module in sorted(graph):
        circle = circle_from(module, [module])
        if circle:
            return [f"modules that import each other: {' -> '.join(circle)}. Fix: move what both need into "
                    "a module below them"]
    return []
