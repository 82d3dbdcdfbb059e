"""The layer contract: each layer imports only the layers below it, and no module imports
itself back through others (no import loops). Checked over every import, lazy ones too.

    consume  <  method  <  pipeline  <  tasks  <  flows  <  cli
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("consume", "method", "pipeline", "tasks", "flows", "cli")
FOLDERS = {"flows": ROOT / "flows", "tasks": ROOT / "tasks"}
# Third-party packages a layer must not import (so a consumer needs NumPy only, and the
# library knows nothing of Prefect).
FORBIDDEN = {
    "consume": {"torch", "prefect", "duckdb", "polars", "scipy", "sklearn", "matplotlib"},
    "method": {"prefect", "duckdb", "polars", "matplotlib", "huggingface_hub"},
    "pipeline": {"prefect", "prefect_dask"},
}


def _modules() -> dict[str, Path]:
    """{module name: file} for the installed layout (flows/ and tasks/ as sparseeval.*)."""
    out = {}
    for base, prefix in [(ROOT / "sparseeval", "sparseeval")] + [
        (folder, f"sparseeval.{name}") for name, folder in FOLDERS.items()
    ]:
        for path in base.rglob("*.py"):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([prefix, *parts])] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> tuple[set[str], set[str]]:
    """(project modules, third-party top-level packages) that a module imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    ours, theirs = set(), set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                       for a in node.names]  # fmt: skip
        else:
            continue
        for t in targets:
            if t.split(".")[0] == "sparseeval":
                ours.add(t)
            else:
                theirs.add(t.split(".")[0])
    return ours, theirs


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def _graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    modules = _modules()
    ours, theirs = {}, {}
    for name, path in modules.items():
        ours[name], theirs[name] = _imports(name, path, modules)
    return ours, theirs


def test_every_layer_imports_only_the_layers_below_it():
    ours, _ = _graph()
    wrong = []
    for module, deps in ours.items():
        layer = _layer(module)
        if layer is None:
            continue  # the package root (lazy re-exports) and _version
        for dep in deps:
            if dep == "sparseeval" or (dep_layer := _layer(dep)) is None:
                if dep not in ("sparseeval._version",):
                    wrong.append(f"{module} -> {dep} (the package root)")
            elif LAYERS.index(dep_layer) > LAYERS.index(layer):
                wrong.append(f"{module} ({layer}) -> {dep} ({dep_layer})")
    assert wrong == []


def test_layers_keep_out_the_heavy_and_the_orchestration_packages():
    _, theirs = _graph()
    wrong = [f"{m} imports {p}" for m, pkgs in theirs.items() for p in pkgs
             if p in FORBIDDEN.get(_layer(m) or "", ())]  # fmt: skip
    assert wrong == []


def test_no_import_loops():
    ours, _ = _graph()
    graph = {m: {d for d in deps if d in ours and d != m} for m, deps in ours.items()}
    graph = {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in graph.items()}
    loops = [sorted(c) for c in _cycles(graph)]
    assert loops == []


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_a_loop():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_every_package_folder_is_installed():
    """pyproject's package list names every folder that holds modules."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"])  # fmt: skip
    found = {m for m, p in _modules().items() if p.name == "__init__.py"} | {"sparseeval.sql"}
    assert found == listed
