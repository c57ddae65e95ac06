"""The layering rule of docs/DESIGN.md, checked from the source: imports only point down
(tablehall → gateway → ratings → workers → workers.games), the pure core imports only the standard
library, and no project modules import each other in a circle.

Every import counts: at the top, inside functions and under `if TYPE_CHECKING` (a circle of type-only
imports still ties the modules together); relative imports are resolved against their package.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

LAYERS = ("tablehall", "gateway", "ratings", "workers", "workers.games")
"""Top to bottom: a module may import its own layer and the layers below it, never one above."""
PURE = "workers.games"
PURE_LIBRARIES: frozenset[str] = frozenset()
"""Third-party libraries the pure core may import (pure functions, no I/O); it needs none today."""


@dataclass(frozen=True, slots=True)
class Import:
    """One import statement's target, where it was written."""

    module: str
    """The importing module (dotted)."""
    path: Path
    line: int
    target: str
    """The imported module, resolved (for `from m import x`: `m.x` when that is a module, else `m`)."""
    text: str
    """The statement as written."""

    def where(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_under(root: Path) -> dict[str, Path]:
    """Every module of the layered packages below `root`, by dotted name."""
    top = {layer.split(".")[0] for layer in LAYERS}
    return {
        module_name(root, path): path
        for package in sorted(top)
        for path in sorted((root / package).rglob("*.py"))
    }


def layer_of(module: str) -> int | None:
    """The index of the deepest layer `module` belongs to (None: no layer, e.g. a library)."""
    found = None
    for rank, layer in enumerate(LAYERS):
        if module == layer or module.startswith(layer + "."):
            found = rank
    return found


def _base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module a `from … import` names, with its leading dots resolved against `module`'s package."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    anchor = package[: len(package) - (node.level - 1)]
    return ".".join([*anchor, *([node.module] if node.module else [])])


def imports_of(root: Path, module: str, path: Path, known: set[str]) -> Iterator[Import]:
    """Every import in one file, wherever it is written."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    shown = path.relative_to(root)
    for node in ast.walk(tree):
        text = ast.unparse(node) if isinstance(node, ast.Import | ast.ImportFrom) else ""
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, shown, node.lineno, alias.name, text)
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, path.name == "__init__.py", node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield Import(module, shown, node.lineno, sub if sub in known else base, text)


def climbs(found: list[Import]) -> list[str]:
    """Imports that point up a layer, and the pure core's imports of anything but the standard library
    (one line per statement, however many names it imports)."""
    wrong: dict[str, None] = {}
    for item in found:
        mine, theirs = layer_of(item.module), layer_of(item.target)
        if mine is None:
            continue
        if theirs is not None and theirs < mine:
            wrong[f"{item.where()}  ({LAYERS[mine]} may not import {LAYERS[theirs]})"] = None
        elif LAYERS[mine] == PURE and theirs is None:
            top = item.target.split(".")[0]
            if top not in sys.stdlib_module_names and top != "__future__" and top not in PURE_LIBRARIES:
                wrong[f"{item.where()}  ({PURE} imports only the standard library and itself)"] = None
    return list(wrong)


def cycles(found: list[Import], known: set[str]) -> list[str]:
    """One circle of imports per knot of project modules that import each other, edge by edge."""
    graph = nx.DiGraph()
    for item in found:
        if item.target in known and not graph.has_edge(item.module, item.target):
            graph.add_edge(item.module, item.target, where=item.where())
    wrong = []
    for knot in nx.strongly_connected_components(graph):
        if len(knot) == 1 and not any(graph.has_edge(m, m) for m in knot):
            continue
        circle = nx.find_cycle(graph.subgraph(knot))
        steps = "; ".join(f"{a} → {b} ({graph.edges[a, b]['where']})" for a, b in circle)
        wrong.append(f"import cycle: {steps}")
    return sorted(wrong)


def problems(root: Path) -> list[str]:
    """Every climbing import and every import cycle of the layered packages below `root`."""
    modules = modules_under(root)
    known = set(modules)
    found = [item for name, path in modules.items() for item in imports_of(root, name, path, known)]
    return climbs(found) + cycles(found, known)
