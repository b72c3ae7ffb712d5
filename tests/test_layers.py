"""The engine's import graph: named layers, each importing only its own layer or lower ones, no
circle, and no import hidden inside a function (except torch's kernels, loaded on demand).

A module's imports then say what it depends on, and a change to a low layer cannot reach back
up. Each folder of the engine is one layer (its modules sit together, and the folders import each
other without a circle); a module of the engine's root and an entry point are their own. The
layers, lowest first (a pattern ending in ``*`` is a folder and everything in it):
"""

from __future__ import annotations

import ast
import fnmatch
from collections import defaultdict
from pathlib import Path

ENGINE = Path(__file__).resolve().parent.parent / "engine"

LAYERS: list[tuple[str, list[str]]] = [
    # decisions, data loading, message catalogs, the memory budget
    ("base", ["engine", "engine.decision", "engine.rules", "engine.i18n", "engine.budget"]),
    # how a decision or a config string becomes safe text (no engine knowledge)
    ("words", ["engine.text*"]),
    # refused input, worded by the catalogs; the release ordering
    ("errors", ["engine.errors", "engine.versions"]),
    # the GPU catalog
    ("hardware", ["engine.hardware*"]),
    # config.json in: the config, its layers and their cache specs, the family, the checkpoint
    # format, the weights
    ("model", ["engine.model*"]),
    # one adapter per engine: flag spellings, defaults, memory accounting, KV storage, where a
    # layout puts the weights
    ("engines", ["engine.engines*"]),
    # parsers, engine releases, what each engine makes of a checkpoint format
    ("software", ["engine.software*"]),
    # KV sizing per engine
    ("kv", ["engine.kv*"]),
    # the hardware gates
    ("gates", ["engine.gates"]),
    # the user's question
    ("scenario", ["engine.scenario", "engine.diagnose"]),
    # speed
    ("perf", ["engine.perf*"]),
    # what a request finds in the prefix cache and a CPU tier (handed to the speed model)
    ("reuse", ["engine.reuse*"]),
    # the layout search and the plans
    ("launch", ["engine.launch*"]),
    # the one computed object, and its re-checked alternatives
    ("study", ["engine.verdict", "engine.study"]),
    ("alternatives", ["engine.alternatives"]),
    # a traffic's GPUs, nodes and cost, re-run through the Study
    ("capacity", ["engine.capacity*"]),
    # a prefill pool and a decode pool for a traffic, and their launch plans, over the Study
    ("disagg", ["engine.disagg*"]),
    # readers of the Study
    ("readers", ["engine.lint*", "engine.measure*", "engine.troubleshoot*"]),
    # the Study in words, tables and files
    ("present", ["engine.present*"]),
    # entry points (a package's ``__main__`` is one wherever it sits)
    ("entry", ["engine.cli", "engine.__main__", "engine.measure.kernels.__main__"]),
]  # fmt: skip

# torch is loaded on demand: the kernels' entry points import inside functions
ON_DEMAND = ("engine.measure.kernels",)


def _module(path: Path) -> str:
    parts = path.relative_to(ENGINE.parent).with_suffix("").parts
    name = ".".join(parts)
    return name.removesuffix(".__init__")


def _modules(packages: tuple[str, ...] = ("engine",)) -> dict[str, Path]:
    return {_module(p): p for pkg in packages for p in (ENGINE.parent / pkg).rglob("*.py")}


# the project's own packages: the app's pages, its UI helpers and the tools import the engine and
# each other, never in a loop either
PROJECT = ("engine", "ui", "app_pages", "tools")


def layer_of(module: str) -> int:
    """The layer ``module`` belongs to: the first exact name that matches, else the most
    specific package pattern (the longest), else the first that matches."""
    best: tuple[int, int] | None = None
    for i, (_, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            if pattern == module:
                return i
            if pattern.endswith("*") and fnmatch.fnmatch(module, pattern):
                specificity = len(pattern)
                if best is None or specificity > best[1]:
                    best = (i, specificity)
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[0]


def _imports(
    mods: dict[str, Path], packages: tuple[str, ...] = ("engine",)
) -> tuple[dict[str, set[str]], list[str]]:
    """Each module's imports of ``packages`` (any kind, TYPE_CHECKING included), and the engine
    imports hidden inside a function."""
    edges: dict[str, set[str]] = defaultdict(set)
    hidden: list[str] = []

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    for mod, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inside: set[int] = set()
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                inside |= {id(n) for n in ast.walk(fn) if n is not fn}
        for node in ast.walk(tree):
            targets: list[str] = []
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith(packages)
            ):
                targets = [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith(packages)]
            for t in targets:
                found = resolve(t)
                if found and found != mod:
                    edges[mod].add(found)
                    hides = found.startswith("engine") and not found.startswith(ON_DEMAND)
                    if id(node) in inside and hides and mod.startswith("engine"):
                        hidden.append(f"{mod} -> {found} (line {node.lineno})")
    return edges, hidden


def test_every_engine_module_has_a_layer() -> None:
    for mod in _modules():
        layer_of(mod)


def upward(edges: dict[str, set[str]]) -> list[str]:
    return [
        f"{a} ({LAYERS[layer_of(a)][0]}) -> {b} ({LAYERS[layer_of(b)][0]})"
        for a, targets in sorted(edges.items())
        for b in sorted(targets)
        if layer_of(b) > layer_of(a)
    ]


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_a_higher_layer() -> None:
    edges, _ = _imports(_modules())
    assert upward(edges) == []


def test_the_import_graph_has_no_circle() -> None:
    edges, _ = _imports(_modules())
    assert circles(edges) == []


def test_the_projects_whole_import_graph_has_no_circle() -> None:
    # the pages, the UI helpers and the tools too (the benchmarks once imported each other)
    edges, _ = _imports(_modules(PROJECT), PROJECT)
    assert any(m.startswith("tools.") for m in edges)
    assert circles(edges) == []


def test_no_engine_import_hides_inside_a_function() -> None:
    _, hidden = _imports(_modules())
    assert hidden == []


def test_the_checks_see_a_planted_upward_import_and_a_planted_circle() -> None:
    planted = {"engine.model.config": {"engine.study"}, "engine.study": {"engine.model.config"}}
    assert upward(planted) == ["engine.model.config (model) -> engine.study (study)"]
    assert circles(planted) == [["engine.model.config", "engine.study"]]
    assert circles({"a": {"b"}, "b": {"c"}}) == []


def is_entry(module: str) -> bool:
    return module.endswith(".__main__")


def folder_of(module: str) -> str:
    """The engine's folder a module sits in (``engine.model.mixers.full`` -> ``engine.model``); a
    module of the engine's root and an entry point are their own."""
    parts = module.split(".")
    if is_entry(module) or len(parts) < 2 or not (ENGINE / parts[1]).is_dir():
        return module
    return ".".join(parts[:2])


def folder_edges(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for a, targets in edges.items():
        for b in targets:
            if folder_of(a) != folder_of(b):
                out[folder_of(a)].add(folder_of(b))
    return out


def test_each_engine_folder_is_one_layer() -> None:
    layers: dict[str, set[str]] = defaultdict(set)
    for mod in _modules():
        layers[folder_of(mod)].add(LAYERS[layer_of(mod)][0])
    assert {folder: names for folder, names in layers.items() if len(names) > 1} == {}


def test_the_layers_name_folders_not_the_files_in_them() -> None:
    named = [p for _, patterns in LAYERS for p in patterns if not p.endswith("*")]
    inside = [p for p in named if folder_of(p) != p]
    assert inside == []


def test_the_engines_folders_import_each_other_without_a_circle() -> None:
    edges, _ = _imports(_modules())
    assert circles(folder_edges(edges)) == []


def test_the_folder_checks_see_a_planted_climb() -> None:
    planted = {"engine.model.config": {"engine.kv.sizing"}, "engine.kv.sizing": {"engine.model"}}
    assert circles(folder_edges(planted)) == [["engine.kv", "engine.model"]]
    assert folder_of("engine.measure.kernels.__main__") == "engine.measure.kernels.__main__"
    assert folder_of("engine.study") == "engine.study"


# the model pipeline's steps: built in one place (engine/kv/pipeline.py) that every reader calls
PIPELINE_STEPS = ("build_architecture", "classify", "weight_report")


def test_one_function_builds_the_model_pipeline() -> None:
    callers = set()
    for mod, path in _modules().items():
        if mod.startswith("engine.model"):
            continue  # the steps themselves
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") in PIPELINE_STEPS:
                callers.add(mod)
    assert callers == {"engine.kv.pipeline"}
