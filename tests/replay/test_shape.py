"""The replay stays a conductor over named collaborators: the engine small, each collaborator a
module of its own, and plugins reached only through the ports ``build_scheduler`` fills."""

from __future__ import annotations

import ast
from pathlib import Path

from kaudit.replay.engine import Replay

REPLAY = Path(__file__).resolve().parents[2] / "kaudit" / "replay"
ENGINE_MAX_LINES = 300
MODULE_MAX_LINES = 450
#: ``Replay``'s own methods: build, run, and the loop's steps. A new replay behaviour gets a
#: collaborator, not a method here.
ENGINE_METHODS = {"__init__", "run", "_run", "_before_step", "_end_instant", "_settled",
                  "_finish"}


def test_the_engine_is_a_conductor() -> None:
    lines = len((REPLAY / "engine.py").read_text().splitlines())
    assert lines <= ENGINE_MAX_LINES, f"replay/engine.py has {lines} lines"
    methods = {name for name, value in vars(Replay).items() if callable(value)}
    assert methods <= ENGINE_METHODS, \
        f"new Replay methods {sorted(methods - ENGINE_METHODS)}: give the job a collaborator"
    assert Replay.__bases__ == (object,), "collaborators are composed, not inherited"


def test_no_replay_module_is_a_second_engine() -> None:
    sizes = {path.name: len(path.read_text().splitlines()) for path in REPLAY.glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > MODULE_MAX_LINES} == {}


def test_the_replay_never_reaches_into_a_plugin() -> None:
    """Ports are filled once, by build_scheduler; the replay reads no plugin's handle."""
    for path in REPLAY.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute):
                assert node.attr not in ("handle", "instances"), \
                    f"{path.name}:{node.lineno} reaches into plugins ({node.attr})"
