"""The layer contract, over every import: static, lazy (inside a function), by name
(`importlib.import_module("...")`, `__import__("...")`) and by names a module keeps in
strings for a dynamic import (the package root's `_EXPORTS`, the predictor registry's
"module:Class", a deployment's "flows/file.py:flow").

    base  <  consume  <  method  <  pipeline  <  tasks  <  flows  <  cli  <  deployments

(the base: `_version` and `_ast_guard`, standard library only)

Each layer imports only itself and the layers before it, and only the third-party packages
its allowlist names (`THIRD_PARTY`; `LAZY`: optional ones, inside a function only). Inside
`pipeline/` the same holds for its tiers: store < recipes < publish (`PIPELINE_TIERS`).
The package root `sparseeval/__init__.py` imports only the base at the top and the library
layers lazily; nothing imports it. No module imports itself back through others (no loops).
`test_each_forbidden_import_kind_is_caught` proves the checks by mutation.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BASE = ("sparseeval._version", "sparseeval._ast_guard")  # standard library only
LAYERS = ("base", "consume", "method", "pipeline", "tasks", "flows", "cli", "deployments")
FOLDERS = {
    "sparseeval": ROOT / "sparseeval",
    "sparseeval.flows": ROOT / "flows",
    "sparseeval.tasks": ROOT / "tasks",
    "deployments": ROOT / "deployments",
}
_PIPELINE = ("numpy", "scipy", "sklearn", "torch", "threadpoolctl", "polars", "pyarrow", "duckdb",
             "matplotlib", "huggingface_hub", "httpx2", "yaml", "cryptography")  # fmt: skip
# Third-party packages each layer may import (at the top of a module or inside a function).
THIRD_PARTY: dict[str, set[str]] = {
    "root": set(),  # `import sparseeval` is light: NumPy-only consumers import it
    "base": set(),
    "consume": {"numpy"},  # a consumer needs NumPy only
    "method": {"numpy", "scipy", "sklearn", "torch", "threadpoolctl"},
    "pipeline": set(_PIPELINE),  # the `pipeline` extra; no Prefect
    "tasks": {"prefect"},
    "flows": {"prefect", "prefect_dask", "dask"},
    "cli": set(),
    "deployments": {"prefect"},
}
# Optional packages a layer may import inside a function only (when that feature is used).
LAZY: dict[str, set[str]] = {
    "consume": {"huggingface_hub", "cryptography", "yaml", "lm_eval", "datasets", "zstandard"},
    "cli": {"numpy", "polars", "duckdb", "prefect"},
}
# Every pipeline module (its first name under pipeline/) in one tier, lowest first.
PIPELINE_TIERS = {
    "store": ("", "store", "sources", "settings", "records",
              "artifacts", "identity", "lease", "alerts", "progress", "stopping"),
    "recipes": ("recipe", "compare", "drift", "suite_recipe", "reports", "gate"),
    "publish": ("publish", "assess", "suite_publish", "manifest", "versions", "mirror",
                "fit_sets"),
}  # fmt: skip
TIERS = tuple(PIPELINE_TIERS)
IMPORTERS = {"import_module", "__import__"}


@dataclass(frozen=True)
class Import:
    """One import of a module: its target (a project module, or a third-party package)."""

    target: str
    ours: bool
    lazy: bool  # inside a function (or under `if TYPE_CHECKING:`)
    how: str  # "import", "import_module", "__import__", "named" (a string a dynamic import reads)


# -- reading the modules ---------------------------------------------------------------------


def sources() -> dict[str, tuple[str, bool]]:
    """{module name: (source, is a package)} for the installed layout and deployments/."""
    out = {}
    for prefix, base in FOLDERS.items():
        for path in base.rglob("*.py"):
            parts = list(path.relative_to(base).with_suffix("").parts)
            package = parts[-1] == "__init__"
            name = ".".join([prefix, *(parts[:-1] if package else parts)])
            out[name] = (path.read_text(), package)
    return out


def imports_of(name: str, text: str, package: bool, modules: set[str]) -> list[Import]:
    """Every import of one module (see the module docstring for the kinds)."""
    pkg = name if package else name.rpartition(".")[0]
    tree = ast.parse(text)
    out: list[Import] = []
    dynamic = False

    def add(target: str, lazy: bool, how: str) -> None:
        top = target.split(".")[0]
        ours = top in ("sparseeval", "deployments")
        if ours or top not in sys.stdlib_module_names:
            out.append(Import(target if ours else top, ours, lazy, how))

    def visit(node: ast.AST, lazy: bool) -> None:
        nonlocal dynamic
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            inner |= isinstance(child, ast.If) and ast.unparse(child.test) == "TYPE_CHECKING"
            if isinstance(child, ast.Import):
                for a in child.names:
                    add(a.name, lazy, "import")
            elif isinstance(child, ast.ImportFrom):
                base = _absolute(child.module or "", child.level, pkg)
                for a in child.names:
                    full = f"{base}.{a.name}"
                    add(full if full in modules else base, lazy, "import")
            elif isinstance(child, ast.Call) and _callee(child) in IMPORTERS:
                arg = child.args[0] if child.args else None
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    level = len(arg.value) - len(arg.value.lstrip("."))
                    add(_absolute(arg.value.lstrip("."), level, pkg), inner, _callee(child))
                else:
                    dynamic = True
            visit(child, inner)

    visit(tree, False)
    if dynamic:  # what a computed name can be: the project modules the module names in strings
        named = {t for s in _strings(tree) if (t := _named_module(s, modules))}
        out += [Import(t, True, True, "named") for t in sorted(named)]
        if not named:
            out.append(Import("<a computed name>", True, True, "import_module"))
    return out


def _absolute(module: str, level: int, package: str) -> str:
    if not level:
        return module
    up = package.split(".")[: len(package.split(".")) - level + 1]
    return ".".join([*up, *([module] if module else [])])


def _callee(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _strings(tree: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)]  # fmt: skip


def _named_module(s: str, modules: set[str]) -> str | None:
    """The project module a string names: "sparseeval.a.b[:attr]", "a.b" (under the package
    root), "flows/file.py:attr" (a deployment's entrypoint); else None."""
    path = s.partition(":")[0]
    if path.endswith(".py"):
        path = "sparseeval." + path.removesuffix(".py").replace("/", ".")
    for candidate in (path, f"sparseeval.{path}"):
        if candidate in modules and candidate != "sparseeval":
            return candidate
    return None


def graph(mods: dict[str, tuple[str, bool]]) -> dict[str, list[Import]]:
    names = set(mods)
    return {m: imports_of(m, text, package, names) for m, (text, package) in mods.items()}


# -- the rules ---------------------------------------------------------------------------------


def layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "deployments":
        return "deployments"
    if module == "sparseeval":
        return "root"
    if module in BASE:
        return "base"
    if module == "sparseeval.__main__":
        return "cli"
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def tier(module: str) -> str | None:
    """The pipeline tier of a pipeline module (None: in no tier)."""
    first = [*module.split("."), ""][2]
    return next((t for t, names in PIPELINE_TIERS.items() if first in names), None)


def violations(imports: dict[str, list[Import]]) -> list[str]:
    """Every broken rule of the contract, one line each."""
    return (_layer_violations(imports) + _third_party_violations(imports)
            + _tier_violations(imports) + _loop_violations(imports))  # fmt: skip


def _layer_violations(imports: dict[str, list[Import]]) -> list[str]:
    wrong = []
    for module, imps in imports.items():
        here = layer(module)
        if here is None:
            wrong.append(f"{module} is in no layer")
            continue
        for imp in (i for i in imps if i.ours):
            there = layer(imp.target)
            line = f"{module} ({here}) -> {imp.target} ({there}, {imp.how})"
            if imp.target not in imports:
                wrong.append(f"{line}: no such module")
            elif there == "root":
                wrong.append(f"{line}: nothing imports the package root")
            elif here == "root":
                if there != "base" and not (imp.lazy and there in LAYERS[1:4]):
                    wrong.append(f"{line}: the root imports the base, the library lazily")
            elif LAYERS.index(there) > LAYERS.index(here):
                wrong.append(line)
    return wrong


def _third_party_violations(imports: dict[str, list[Import]]) -> list[str]:
    wrong = []
    for module, imps in imports.items():
        here = layer(module) or ""
        for imp in (i for i in imps if not i.ours):
            allowed = THIRD_PARTY.get(here, set()) | (LAZY.get(here, set()) if imp.lazy else set())
            if imp.target not in allowed:
                where = "inside a function" if imp.lazy else "at the top"
                wrong.append(f"{module} ({here}) imports {imp.target} {where} ({imp.how})")
    return wrong


def _tier_violations(imports: dict[str, list[Import]]) -> list[str]:
    wrong = []
    for module, imps in imports.items():
        if layer(module) != "pipeline":
            continue
        here = tier(module)
        if here is None:
            wrong.append(f"{module} is in no pipeline tier (add it to PIPELINE_TIERS)")
            continue
        for imp in (i for i in imps if i.ours and layer(i.target) == "pipeline"):
            there = tier(imp.target)
            if there is not None and TIERS.index(there) > TIERS.index(here):
                wrong.append(f"{module} ({here}) -> {imp.target} ({there}, {imp.how})")
    return wrong


def _loop_violations(imports: dict[str, list[Import]]) -> list[str]:
    edges = {m: {i.target for i in imps if i.ours and i.target in imports and i.target != m
                 and not m.startswith(i.target + ".")}  # a package's own __init__: no loop
             for m, imps in imports.items()}  # fmt: skip
    return [f"import loop: {' <-> '.join(sorted(c))}" for c in cycles(edges)]


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
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


# -- the tests ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real() -> tuple[dict[str, tuple[str, bool]], dict[str, list[Import]]]:
    mods = sources()
    return mods, graph(mods)


def test_the_code_keeps_the_contract(real):
    assert violations(real[1]) == []


def test_every_module_is_seen(real):
    mods, imports = real
    assert {"sparseeval", "deployments.spec", "deployments.serve", "sparseeval.flows.refresh",
            "sparseeval.tasks.publish", "sparseeval.pipeline.store.db"} <= set(mods)  # fmt: skip
    named = {i.target for i in imports["sparseeval"] if i.how == "named"}
    assert "sparseeval.consume.sets.anchorset" in named  # the root's lazy exports are imports
    registry = {i.target for i in imports["sparseeval.method.registry"] if i.how == "named"}
    assert registry == {"sparseeval.method.predictors"}
    spec = {i.target for i in imports["deployments.spec"] if i.how == "named"}
    assert {"sparseeval.flows.refresh", "sparseeval.flows.manual"} <= spec


LAZY_DEF = "\n\ndef _mutant():\n    {}\n"
MUTATIONS = {
    "static upward import": (
        "sparseeval.consume.answers.ids", "from sparseeval.flows import refresh",
        "sparseeval.consume.answers.ids (consume) -> sparseeval.flows.refresh"),
    "lazy upward import": ("sparseeval.method.metrics",
                           LAZY_DEF.format("from sparseeval.cli import main"),
                           "sparseeval.method.metrics (method) -> sparseeval.cli"),
    "import_module string (a loop)": (
        "sparseeval.method.estimator",
        LAZY_DEF.format('return importlib.import_module("sparseeval.method.paper")'),
        "import loop: sparseeval.method.estimator <-> sparseeval.method.paper"),
    "__import__ string": ("sparseeval.consume.sets.layout", '__import__("prefect")',
                          "sparseeval.consume.sets.layout (consume) imports prefect at the top"),
    "a computed name": ("sparseeval.consume.answers.ids",
                        LAZY_DEF.format("return importlib.import_module(NAME)"),
                        "<a computed name>"),
    "third party not allowlisted": (
        "sparseeval.consume.sets.hub", "import huggingface_hub",
        "sparseeval.consume.sets.hub (consume) imports huggingface_hub"),
    "upward inside pipeline": ("sparseeval.pipeline.drift", "import sparseeval.pipeline.mirror",
                               "sparseeval.pipeline.drift (recipes) -> sparseeval.pipeline.mirror"),
    "deployments": ("deployments.spec", "import torch", "deployments.spec (deployments) imports"
                    " torch"),
    "the library importing deployments": ("sparseeval.pipeline.settings",
                                          "from deployments.spec import specs",
                                          "sparseeval.pipeline.settings (pipeline) -> deployments"),
    "package root, top level": ("sparseeval", "import sparseeval.method.estimator",
                                "sparseeval (root) -> sparseeval.method.estimator (method,"),
    "package root, heavy package": ("sparseeval", LAZY_DEF.format("import torch"),
                                    "sparseeval (root) imports torch"),
    "importing the package root": ("sparseeval.method.matrix", "import sparseeval",
                                   "nothing imports the package root"),
    "a pipeline module in no tier": ("sparseeval.pipeline.newthing", "",
                                     "sparseeval.pipeline.newthing is in no pipeline tier"),
}  # fmt: skip


@pytest.mark.parametrize("kind", list(MUTATIONS))
def test_each_forbidden_import_kind_is_caught(real, kind):
    """The contract fails when one forbidden import is added to a copy of the code."""
    mods, imports = real
    module, line, expected = MUTATIONS[kind]
    text, package = mods.get(module, ("", False))
    mutated = f"{text}\nimport importlib\n{line}\n"
    names = set(mods) | {module}
    found = violations(imports | {module: imports_of(module, mutated, package, names)})
    assert any(expected in v for v in found), (kind, found)
    assert violations(imports) == []  # the real code is untouched


def test_the_cycle_finder_finds_a_loop():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_every_package_folder_is_installed(real):
    """pyproject's package list names every folder that holds modules."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"])  # fmt: skip
    found = {m for m, (_, package) in real[0].items() if package and layer(m) != "deployments"}
    assert found | {"sparseeval.sql"} == listed


def private_imports(mods: dict[str, tuple[str, bool]]) -> list[str]:
    """`module imports _name from other` for each private name imported across modules (a
    private module, `_name.py`, may be imported inside its own package)."""
    out = []
    for name, (text, package) in mods.items():
        pkg = name if package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = _absolute(node.module or "", node.level, pkg)
            if not base.startswith(("sparseeval", "deployments")):
                continue
            for a in node.names:
                private = a.name.startswith("_") and not a.name.startswith("__")
                own_package = f"{base}.{a.name}" in mods and base == pkg
                if private and not own_package and base != name:
                    out.append(f"{name} imports {a.name} from {base}")
    return out


def test_no_private_name_is_imported_from_another_module(real):
    """Helpers are private to their module: a name used elsewhere is public (issue [1/5])."""
    assert private_imports(real[0]) == []


def test_a_private_import_is_caught():
    mods = {"sparseeval.a": ("def _helper():\n    pass\n", False),
            "sparseeval.b": ("from sparseeval.a import _helper\n", False),
            "sparseeval.p": ("", True), "sparseeval.p._m": ("", False),
            "sparseeval.p.c": ("from sparseeval.p import _m\n", False)}  # fmt: skip
    assert private_imports(mods) == ["sparseeval.b imports _helper from sparseeval.a"]


def _declared_all(text: str) -> list[str] | None:
    """The names a module's `__all__` lists (None: it has none)."""
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return [ast.literal_eval(e) for e in node.value.elts]
    return None


def unlisted_imports(mods: dict[str, tuple[str, bool]]) -> list[str]:
    """`module has no __all__` for each public module without one, and `module imports name
    from other, which other's __all__ does not list` for each name taken from a public
    module that does not export it (a submodule of a package aside)."""
    out = [f"{name} has no __all__" for name, (text, package) in mods.items()
           if not package and not name.rpartition(".")[2].startswith("_")
           and _declared_all(text) is None]  # fmt: skip
    for name, (text, package) in mods.items():
        pkg = name if package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = _absolute(node.module or "", node.level, pkg)
            if base not in mods or mods[base][1] or base == name:
                continue
            listed = _declared_all(mods[base][0])
            for a in node.names:
                if listed is not None and a.name not in listed and not a.name.startswith("_"):
                    out.append(f"{name} imports {a.name} from {base}, whose __all__ omits it")
    return out


def test_public_modules_say_what_they_export_and_others_import_only_that(real):
    """Each public module has `__all__`; what another module imports from it is in it
    (issue [1/5]: helpers private, the public surface said)."""
    assert unlisted_imports(real[0]) == []


def test_an_unlisted_import_is_caught():
    mods = {"sparseeval.a": ("def f():\n    pass\n\n\ndef g():\n    pass\n\n\n__all__ = ['f']\n",
                             False),
            "sparseeval.b": ("from sparseeval.a import f, g\n\n__all__ = []\n", False),
            "sparseeval.c": ("X = 1\n", False)}  # fmt: skip
    assert unlisted_imports(mods) == [
        "sparseeval.c has no __all__",
        "sparseeval.b imports g from sparseeval.a, whose __all__ omits it",
    ]
