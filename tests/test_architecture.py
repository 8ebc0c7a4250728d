"""The package's shape: no import circles (library below, programs above)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "kmt_ref"


def _module(path):
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph():
    """``{module: {modules it imports anywhere in its body}}`` within kmt_ref (lazy imports included)."""
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        name = _module(path)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:  # `from . import kernels` names a module
                    sub = f"{target}.{alias.name}"
                    deps.add(sub if (PACKAGE.parent / (sub.replace(".", "/") + ".py")).exists() else target)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("kmt_ref")}
        graph[name] = {d for d in deps if d != name and not name.startswith(d + ".")}
    return graph


def _cycles(graph):
    found, state = [], {}

    def visit(node, stack):
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                found.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, stack + [dep])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_no_import_circles():
    graph = import_graph()
    assert len(graph) > 30
    cycles = [c for c in _cycles(graph) if not any(m.endswith("__init__") for m in c)]
    # A package's __init__ re-exports its modules; a cycle through it is not a layering problem
    # unless a module imports its own package's __init__, which the test above counts.
    assert cycles == [], "import circles: " + "; ".join(" -> ".join(c) for c in cycles)


#: The tiers above the library: they may import the library, never the other way round.
ABOVE = ("kmt_ref.programs", "kmt_ref.plotting", "kmt_ref.exercises", "kmt_ref.__main__")


def test_the_library_never_imports_the_programs_above_it():
    graph = import_graph()
    assert {"kmt_ref.programs.verify", "kmt_ref.programs.experiments", "kmt_ref.layer"} <= set(graph)

    def above(module):
        return any(module == t or module.startswith(t + ".") for t in ABOVE)

    upward = sorted(f"{m} -> {d}" for m, deps in graph.items() if not above(m) for d in deps if above(d))
    assert upward == [], "library modules importing programs: " + "; ".join(upward)


#: The speed wing's tiers, lowest first: a tier imports only tiers below it, and the wing never imports
#: the engine or the layer that use it.
KERNEL_TIERS = (("kmt_ref.kernels.pool", "kmt_ref.kernels.structure"), ("kmt_ref.kernels.softmax",),
                ("kmt_ref.kernels.plain",), ("kmt_ref.kernels.fast",), ("kmt_ref.kernels.labels",))


def test_the_kernels_are_tiers_that_only_import_downward():
    graph = import_graph()
    level = {m: i for i, tier in enumerate(KERNEL_TIERS) for m in tier}
    assert set(level) == {m for m in graph if m.startswith("kmt_ref.kernels.")}, "a kernel module has no tier"
    wrong = sorted(f"{m} -> {d}" for m in level for d in graph[m]
                   if (d in level and level[d] >= level[m]) or d in ("kmt_ref.engine", "kmt_ref.layer"))
    assert wrong == [], "kernel modules importing sideways or up: " + "; ".join(wrong)


def test_plotting_and_the_workbook_read_results_without_the_programs():
    # They read committed results through the library (kmt_ref.learning.protocols, the programs' own loaders
    # are for the programs): nothing below the programs imports them.
    graph = import_graph()
    wrong = sorted(f"{m} -> {d}" for m, deps in graph.items()
                   if m.startswith(("kmt_ref.plotting", "kmt_ref.exercises")) for d in deps
                   if d.startswith("kmt_ref.programs"))
    assert wrong == [], "; ".join(wrong)
