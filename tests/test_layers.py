"""kaudit's packages form layers: data flows one way and nothing imports upward.

The import graph is built from the code itself (every ``import`` and ``from … import`` of a
``kaudit`` module, at module level or inside a function), so a lazy import cannot hide a cycle.
``docs/architecture.md`` draws the same layers in its layer table, which is read here and must
equal :data:`LAYERS`; :data:`FORBIDDEN` holds the imports the architecture rules out beyond
layer order.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kaudit"
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"

#: Bottom up. A package may import its own modules and those of lower layers only.
LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(layer) for layer in (
    {"(root)", "errors", "datadirs", "gostrings"},
    {"quantity", "input_limits", "versions", "k8s"},
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

#: Imports the architecture rules out beyond layer order: (importing unit, imported unit, why).
#: Some are implied by LAYERS today; they stay so that reordering LAYERS cannot allow them.
FORBIDDEN: tuple[tuple[str, str, str], ...] = (
    ("plugins", "store", "plugins never know about SQL"),
    ("cluster", "framework", "the cache sits below the framework"),
    ("framework", "plugins", "the framework knows plugins only by what they declare"),
    ("config", "plugins", "configuration knows plugins only as specs"),
    ("queries", "replay", "queries only read: they never replay"),
    ("queries", "scheduler", "queries only read: they never build a scheduler"),
    ("replay", "fgd", "the replay reaches plugins only through the Handle's typed ports"),
    ("cli", "replay", "a command replays through services.replay"),
    ("dashboard", "replay", "a page replays nothing: a what-if goes through services"),
    ("dashboard", "sweep", "the sweep report is a query (queries.sweeps)"),
)

#: Forbidden imports the code still makes, each with what removes it. Their tests are strict
#: xfails: once the import is gone the test fails, and its entry here is removed.
STILL_IMPORTED: dict[tuple[str, str], str] = {
}


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


def _units(root: Path = PACKAGE) -> set[str]:
    """Every layer unit under ``root``: each package directory (with or without modules yet),
    each root module, and ``(root)`` for the package's ``__init__``."""
    units = {_unit(_module_name(path, root)) for path in root.rglob("*.py")}
    units.update(path.name for path in root.iterdir()
                 if path.is_dir() and not path.name.startswith(("_", ".")))
    return units


def test_every_package_has_a_layer() -> None:
    missing = sorted(_units() - set(LEVEL))
    assert missing == [], f"add {missing} to LAYERS and to docs/architecture.md's layer table"


def test_layers_name_only_packages_that_exist() -> None:
    stale = sorted(set(LEVEL) - _units())
    assert stale == [], f"LAYERS names {stale}, which kaudit/ does not hold"


def test_no_unit_sits_in_two_layers() -> None:
    assert sum(map(len, LAYERS)) == len(LEVEL)


def layer_table(text: str) -> list[tuple[int, list[str]]]:
    """The layer table of ``docs/architecture.md``, bottom up: (number, sorted units) per layer.

    The table is the first fenced block after the ``## The layers`` heading. Its header line
    names three columns, ``layer``, ``units`` and a description; a line with a number starts a
    layer, a line with units and no number adds them to the layer above it, and a line with
    neither continues a description. Units are separated by commas."""
    section = text.split("\n## The layers\n", 1)
    assert len(section) == 2, "docs/architecture.md has no '## The layers' section"
    fenced = re.search(r"^```\n(.*?)^```$", section[1], re.MULTILINE | re.DOTALL)
    assert fenced, "the layers section of docs/architecture.md has no fenced table"
    header, *rows = fenced.group(1).splitlines()
    columns = re.match(r"\s*layer\s+(units\s+)\S", header)
    assert columns, f"the layer table's header must read 'layer  units  ...', not {header!r}"
    units_at, text_at = columns.start(1), columns.end(1)
    table: list[tuple[int, list[str]]] = []
    for row in rows:
        number, names = row[:units_at].strip(), row[units_at:text_at]
        assert names.strip() == "" or names.endswith("  ") or len(row) <= text_at, (
            f"units spill into the description column: {row!r}")
        names = names.strip()
        if number:
            assert number.isdigit(), f"not a layer number: {row!r}"
            table.append((int(number), []))
        if names:
            assert table, f"units before the first layer number: {row!r}"
            table[-1][1].extend(name.strip() for name in names.split(",") if name.strip())
    return [(number, sorted(names)) for number, names in reversed(table)]


def _table_difference(table: list[tuple[int, list[str]]],
                      expected: list[tuple[int, list[str]]]) -> str:
    def show(row: tuple[int, list[str]] | None) -> str:
        return "(no layer)" if row is None else f"{row[0]}: {', '.join(row[1])}"

    lines = ["docs/architecture.md's layer table (bottom up) differs from LAYERS:"]
    for i in range(max(len(table), len(expected))):
        doc = table[i] if i < len(table) else None
        code = expected[i] if i < len(expected) else None
        if doc != code:
            lines.append(f"  row {i}: the doc has {show(doc)}; LAYERS has {show(code)}")
    return "\n".join(lines)


def test_the_architecture_draws_the_layers_of_the_code() -> None:
    """The doc's layer table is LAYERS: the same numbers with the same units, bottom up."""
    table = layer_table(ARCHITECTURE.read_text())
    expected = [(level, sorted(layer)) for level, layer in enumerate(LAYERS)]
    assert table == expected, _table_difference(table, expected)


def test_the_layer_table_reader_takes_continuations_and_refuses_spills() -> None:
    text = ("# t\n\n## The layers\n\n```\n layer  units      what\n"
            "     1  b, c       the b\n"
            "                   and more of it\n"
            "        d          the d\n"
            "     0  a          the a\n```\n")
    assert layer_table(text) == [(0, ["a"]), (1, ["b", "c", "d"])]
    spilled = text.replace("     0  a          the a", "     0  a, e, f,long the a")
    with pytest.raises(AssertionError, match="spill"):
        layer_table(spilled)


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


@pytest.mark.parametrize(("source", "target", "why"), [
    pytest.param(source, target, why, id=f"{source}-{target}", marks=[
        pytest.mark.xfail(strict=True, reason=STILL_IMPORTED[(source, target)])
    ] if (source, target) in STILL_IMPORTED else [])
    for source, target, why in FORBIDDEN])
def test_the_data_flow_of_the_guide_holds(source: str, target: str, why: str) -> None:
    """No import the architecture rules out: FORBIDDEN, checked over the import graph."""
    edges = package_edges()
    assert (source, target) not in edges, f"{why}; but {'; '.join(edges[(source, target)])}"


def test_forbidden_imports_name_packages_with_a_layer() -> None:
    assert {unit for source, target, _ in FORBIDDEN for unit in (source, target)} <= set(LEVEL)
    assert set(STILL_IMPORTED) <= {(source, target) for source, target, _ in FORBIDDEN}


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


def test_the_checker_sees_packages_without_modules_yet(tmp_path: Path) -> None:
    root = tmp_path / "kaudit"
    for directory in ("empty", "sub", "__pycache__"):
        (root / directory).mkdir(parents=True)
    for module in ("__init__.py", "mod.py", "sub/__init__.py"):
        (root / module).write_text("")
    assert _units(root) == {"(root)", "mod", "sub", "empty"}
