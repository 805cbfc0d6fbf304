"""kaudit's packages form layers: data flows one way and nothing imports upward.

The import graph is built from the code itself (every ``import`` and ``from … import`` of a
``kaudit`` module, at module level or inside a function), so a lazy import cannot hide a cycle.
``docs/architecture.md`` draws the same layers.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kaudit"

#: Bottom up. A package may import its own modules and those of lower layers only.
LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(layer) for layer in (
    {"(root)", "errors", "datadirs"},
    {"quantity", "input_limits", "gostrings"},
    {"config", "model", "tracegen"},
    {"cluster"},
    {"framework"},
    {"plugins", "fgd"},
    {"scheduler"},
    {"store"},
    {"eventlog"},
    {"readers", "replay", "record"},
    {"queries"},
    {"services"},
    {"sweep"},
    {"dashboard"},
    {"cli"},
    {"__main__"},
))
LEVEL = {name: level for level, layer in enumerate(LAYERS) for name in layer}


def _unit(module: str) -> str:
    """The layer unit of a dotted module name: its package under ``kaudit``, or a root module
    (``kaudit.errors`` → ``errors``; ``kaudit`` itself → ``(root)``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def _module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, root: Path) -> set[str]:
    """Every kaudit module ``path`` imports (absolute or relative, anywhere in the file)."""
    module = _module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name == "kaudit" or name.startswith("kaudit.")}


def package_edges(root: Path = PACKAGE) -> dict[tuple[str, str], list[str]]:
    """(importing unit, imported unit) → the module-level imports behind it."""
    modules = {_module_name(path, root) for path in root.rglob("*.py")}
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        source = _module_name(path, root)
        for target in sorted(_imports(path, root)):
            if target not in modules and target.rpartition(".")[0] in modules:
                target = target.rpartition(".")[0]  # ``from kaudit.x import name``
            a, b = _unit(source), _unit(target)
            why = f"{source} imports {target}"
            if a != b and why not in edges[(a, b)]:
                edges[(a, b)].append(why)
    return edges


def test_every_package_has_a_layer() -> None:
    units = {_unit(_module_name(path)) for path in PACKAGE.rglob("*.py")}
    assert units - set(LEVEL) == set(), "add the new package to LAYERS and docs/architecture.md"


def test_no_package_imports_a_higher_or_equal_layer() -> None:
    upward = [f"{a} (layer {LEVEL[a]}) → {b} (layer {LEVEL[b]}): {', '.join(why[:3])}"
              for (a, b), why in sorted(package_edges().items())
              if a in LEVEL and b in LEVEL and LEVEL[b] >= LEVEL[a]]
    assert upward == []


def test_no_cycles_between_packages() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in package_edges():
        graph[a].add(b)
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*trail[trail.index(nxt):], nxt] if nxt in trail else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    assert cycles == []


@pytest.mark.parametrize(("source", "target"), [("plugins", "store"), ("cluster", "framework"),
                                                ("queries", "replay"), ("framework", "plugins"),
                                                ("config", "plugins")])
def test_the_data_flow_of_the_guide_holds(source: str, target: str) -> None:
    """Plugins never know about SQL, the cache sits below the framework, queries never replay,
    the framework and configuration know plugins only by what they declare."""
    assert (source, target) not in package_edges()


def test_the_checker_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    root = tmp_path / "kaudit"
    for package in ("queries", "replay", "cli"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "replay" / "engine.py").write_text("")
    (root / "queries" / "probe.py").write_text(
        "def f():\n    from kaudit.replay import engine\n    from ..cli import main\n")
    edges = package_edges(root)
    assert ("queries", "replay") in edges and ("queries", "cli") in edges
