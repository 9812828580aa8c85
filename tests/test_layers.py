"""The package's imports point one way: no cycles, and the layers below never import those above.

Every import of a package module is counted, function-local ones too (they hid a 13-file cycle:
the ``PartitionPass`` imported the compile command, which imported the build, which imported the
passes). Read from the source with ``ast``; nothing is imported.
"""

import ast
import functools
import os

import networkx as nx
import pytest

PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tvm_partition")


def _module_name(path: str) -> str:
    rel = os.path.relpath(path, os.path.dirname(PKG))[:-3].replace(os.sep, ".")
    return rel[: -len(".__init__")] if rel.endswith(".__init__") else rel


def _modules() -> dict[str, str]:
    out = {}
    for root, _, files in os.walk(PKG):
        for f in files:
            if f.endswith(".py"):
                out[_module_name(os.path.join(root, f))] = os.path.join(root, f)
    return out


def _runtime_nodes(tree):
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (annotations, never run)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


@functools.lru_cache(maxsize=1)
def import_graph() -> nx.DiGraph:
    """``A -> B``: module A imports module B (``from . import B`` counts as B, not as the package)."""
    mods = _modules()
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for name, path in mods.items():
        package = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in _runtime_nodes(tree):
            targets = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                if t in mods and t != name:
                    g.add_edge(name, t)
    return g


def test_no_import_cycles():
    cycles = list(nx.simple_cycles(import_graph()))
    assert not cycles, f"import cycles: {sorted(cycles, key=len)[:3]}"


def test_the_graph_sees_function_local_imports():
    # the oracle's own check: PartitionPass imports the planners inside a method
    assert import_graph().has_edge("tvm_partition.passes.partition", "tvm_partition.planners")


def _reach(g, name):
    return nx.descendants(g, name) | {name}


def _bundled(paths) -> set[str]:
    """The modules a bundle holds: ``paths`` are files and folders inside the package."""
    held = {"tvm_partition"}
    for p in paths:
        full = os.path.join(PKG, p)
        files = [os.path.join(r, f) for r, _, fs in os.walk(full) for f in fs] if os.path.isdir(full) else [full]
        held |= {_module_name(f) for f in files if f.endswith(".py")}
    return held


@pytest.mark.parametrize("bundle", ["deploy", "bench"])
def test_runtime_half_imports_no_compiler(bundle):
    """What a bundle copies (deploy's RUNTIME_MODULES; a benchmark bundle adds bench's BUNDLE_MODULES)
    imports only what the bundle holds: an edge server has no compiler."""
    from tvm_partition.cli.deploy import RUNTIME_MODULES

    paths = RUNTIME_MODULES
    if bundle == "bench":
        from tvm_partition.bench.suite import BUNDLE_MODULES

        paths = RUNTIME_MODULES + BUNDLE_MODULES
    held = _bundled(paths)
    assert "tvm_partition.runtime.runner" in held and len(held) > 8  # the oracle reads the folders
    g = import_graph()
    for m in held - {"tvm_partition"}:
        outside = _reach(g, m) - held
        assert not outside, f"{m} reaches {sorted(outside)}, which a runtime-only bundle does not hold"


#: The layers, bottom up (docs/ARCHITECTURE.md, "Layers"), each a folder of the package (the
#: base: the modules at its top): a module may import its own layer and those below.
LAYERS = [
    ("base", ["errors", "devices", "inputs", "plan", "flags", "processes"]),
    ("runtime", ["runtime"]),
    ("ir", ["ir", "frontend"]),
    ("cost", ["cost_models"]),
    ("plan", ["planners"]),
    ("rewrite", ["passes"]),
    ("build", ["build", "profiling"]),
    ("commands", ["cli", "bench", "compile", "__main__"]),
]


def layer_of(module: str) -> int | None:
    name = module[len("tvm_partition."):]
    hits = [(len(p), i) for i, (_, prefixes) in enumerate(LAYERS) for p in prefixes
            if name == p or name.startswith(p + ".")]
    return max(hits)[1] if hits else None


def test_every_module_has_a_layer():
    assert not [m for m in import_graph() if m != "tvm_partition" and layer_of(m) is None]


def test_layers_point_down():
    up = [f"{a} ({LAYERS[layer_of(a)][0]}) -> {b} ({LAYERS[layer_of(b)][0]})"
          for a, b in import_graph().edges if "tvm_partition" not in (a, b) and layer_of(b) > layer_of(a)]
    assert not up, f"imports that go up a layer: {sorted(up)}"


def test_nothing_imports_the_command_line():
    commands = [name for name, _ in LAYERS].index("commands")
    g = import_graph()
    users = {a for m in g if m.startswith("tvm_partition.cli") for a in g.predecessors(m)}
    assert "tvm_partition.bench.suite" in users  # the oracle sees the benchmark importing compile
    assert not {a for a in users if layer_of(a) != commands}


def test_the_layers_are_folders():
    """Every module below the commands sits in its layer's folder (the base: the package's top)."""
    for m in import_graph():
        name = m[len("tvm_partition."):] if m != "tvm_partition" else ""
        layer = LAYERS[layer_of(m)][0] if name else "base"
        if layer == "base":
            assert "." not in name, m
        elif layer != "commands":
            assert name.split(".")[0] in dict(LAYERS)[layer], m
