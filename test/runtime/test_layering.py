"""The package's import rules: the layout shows the architecture (collect -> solve -> apply).

Read from the source (every `import` and `from ... import`, at any depth, as the AST has
them) and checked in a fresh process for what actually gets loaded:
- the allocator (`runtime/alloc/`) imports no xDSL and nothing of dialects, passes, the
  interpreter, presentation, verification, interop, importers, batch or tools;
- presentation (`runtime/show/`) imports the allocator only;
- the interpreter (`runtime/interp/`) never imports passes, tools or verification, and its
  kernel library (`kernels.py`, `image_kernels.py`, `kernel_args.py`, `detmath.py`) imports
  nothing but numpy;
- dialects import nothing of passes or tools; no library imports a driver (`tools/`), so
  exit statuses are mapped by the drivers alone (libraries raise errors with a kind);
- passes import presentation only inside functions (the output layer, `passes/planning/outputs.py`),
  never when a pass module is imported;
- `ir_text` imports nothing of interop (interop reads text through it);
- `errors.py` and `files.py` import only the standard library (every layer uses them);
- no module imports another's private names (`from x import _name`); the allocator's
  private extension modules (`_search`, `_large`, ...) are imported inside the allocator only;
- a benchmark imports no driver.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTENSIONS = ("_search", "_large", "_greedy", "_sweep", "_csvtext")  # the allocator's Cython kernels


def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _package(path: Path, root: Path) -> list[str]:
    return ["telamalloc", *path.relative_to(root).parent.parts]


def _imports(tree: ast.AST, package: list[str], top_level_only: bool = False):
    """(module, imported name or None) for every import in ``tree`` (relative ones resolved);
    ``top_level_only``: not those inside functions."""
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            yield module, None
            for alias in node.names:
                yield f"{module}.{alias.name}", alias.name
        elif top_level_only and isinstance(node, (ast.If, ast.Try, ast.With)):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue  # annotations only
            for child in ast.iter_child_nodes(node):
                yield from _imports(ast.Module(body=[child], type_ignores=[]), package, True)


def imported_modules(path: Path, root: Path = ROOT, top_level_only: bool = False) -> set[str]:
    """Every module `path` imports, absolute (relative imports resolved against the package)."""
    return {module for module, _ in _imports(_parsed(path), _package(path, root), top_level_only)}


def sources(folder: str, root: Path = ROOT) -> list[Path]:
    files = sorted((root / folder).rglob("*.py")) + sorted((root / folder).rglob("*.pyx"))
    assert files, folder
    return files


def _cython_imports(path: Path) -> set[str]:
    found = set()
    for line in path.read_text().splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] in ("import", "from", "cimport"):
            found.add(words[1])
    return found


def _matches(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def violations(folder: str, forbidden: tuple[str, ...], root: Path = ROOT, top_level_only: bool = False) -> list[str]:
    bad = []
    for path in sources(folder, root):
        if path.suffix == ".py":
            modules = imported_modules(path, root, top_level_only)
        else:
            modules = _cython_imports(path)
        bad.extend(f"{path.relative_to(root)} imports {module}" for module in sorted(modules)
                   if _matches(module, forbidden))
    return bad


IR = ("xdsl", "telamalloc.dialects", "telamalloc.passes", "telamalloc.tools", "telamalloc.interop",
      "telamalloc.importers", "telamalloc.verification", "telamalloc.ir_text", "telamalloc.universe",
      "telamalloc.batch", "telamalloc.mlir_text")
LIBRARIES = ("runtime", "passes", "dialects", "interop", "importers")


@pytest.mark.parametrize("folder, forbidden", [
    ("runtime/alloc", IR + ("telamalloc.runtime.interp", "telamalloc.runtime.show")),
    ("runtime/show", IR + ("telamalloc.runtime.interp",)),
    ("runtime/interp", ("telamalloc.passes", "telamalloc.tools", "telamalloc.verification", "telamalloc.interop",
                        "telamalloc.importers", "telamalloc.runtime.show", "telamalloc.batch")),
    ("dialects", ("telamalloc.passes", "telamalloc.tools", "telamalloc.runtime.interp", "telamalloc.verification")),
    ("passes", ("telamalloc.tools", "telamalloc.runtime.interp", "telamalloc.verification", "telamalloc.batch")),
    ("interop", ("telamalloc.tools",)),
    ("importers", ("telamalloc.tools",)),
])
def test_import_rules(folder, forbidden):
    assert violations(folder, forbidden) == []


@pytest.mark.parametrize("folder", LIBRARIES)
def test_no_library_imports_a_driver_or_maps_exit_statuses(folder):
    assert violations(folder, ("telamalloc.tools",)) == []


def test_root_libraries_import_no_driver():
    for name in ("ir_text.py", "mlir_text.py", "verification.py", "batch.py", "errors.py", "files.py", "extras.py",
                 "duration.py", "universe.py"):
        bad = [module for module in imported_modules(ROOT / name) if _matches(module, ("telamalloc.tools",))]
        assert bad == [], name


def test_passes_import_presentation_only_when_they_write_an_output():
    assert violations("passes", ("telamalloc.runtime.show",), top_level_only=True) == []


def test_ir_text_imports_nothing_of_interop():
    modules = imported_modules(ROOT / "ir_text.py") | imported_modules(ROOT / "mlir_text.py")
    assert [module for module in modules if _matches(module, ("telamalloc.interop",))] == []


@pytest.mark.parametrize("name", ["errors.py", "files.py"])
def test_the_bottom_modules_import_only_the_standard_library(name):
    outside = {module.split(".")[0] for module in imported_modules(ROOT / name)} - set(sys.stdlib_module_names)
    assert outside == set(), name


def private_imports(root: Path = ROOT) -> list[str]:
    """`from x import _name` of a telamalloc module, outside the tests and benchmarks; the
    allocator's extension modules count as private modules of the allocator."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if relative.parts[0] in ("test", "bench", "build") or ".venv" in relative.parts:
            continue
        inside_allocator = relative.parts[:2] == ("runtime", "alloc")
        for module, name in _imports(_parsed(path), _package(path, root)):
            if name is None or not module.startswith("telamalloc") or not name.startswith("_") or name.startswith("__"):
                continue
            if name in EXTENSIONS and inside_allocator:
                continue
            found.append(f"{relative} imports {module}")
    return found


def test_no_module_imports_another_modules_private_names():
    assert private_imports() == []


def test_benchmarks_import_no_driver():
    bad = []
    for path in sorted((ROOT / "bench").iterdir()):
        if path.is_file() and (path.suffix == ".py" or path.read_text(errors="replace").startswith("#!/usr/bin/env python")):
            modules = {module for module, _ in _imports(_parsed(path), ["telamalloc", "bench"])}
            bad.extend(f"bench/{path.name} imports {module}" for module in modules if _matches(module, ("telamalloc.tools",)))
    assert bad == []


def test_the_kernel_library_imports_only_numpy():
    library = ("kernels", "detmath", "image_kernels", "kernel_args")
    for name in library:
        modules = imported_modules(ROOT / "runtime" / "interp" / f"{name}.py")
        outside = {m for m in modules if m.split(".")[0] not in ("numpy", "__future__", "collections", "dataclasses",
                                                                   "fractions", "math", "typing")
                   and m != "telamalloc.runtime.interp"
                   and not any(m == own or m.startswith(f"{own}.")
                               for own in (f"telamalloc.runtime.interp.{module}" for module in library))}
        assert outside == set(), name


def test_the_rules_would_catch_each_violation(tmp_path):
    """The checkers themselves, on a scratch tree (nothing is written into the repository)."""
    (tmp_path / "runtime" / "alloc").mkdir(parents=True)
    (tmp_path / "runtime" / "alloc" / "probe.py").write_text("from xdsl.ir import Operation\n")
    assert violations("runtime/alloc", IR, root=tmp_path) == ["runtime/alloc/probe.py imports xdsl.ir",
                                                              "runtime/alloc/probe.py imports xdsl.ir.Operation"]
    (tmp_path / "passes").mkdir()
    (tmp_path / "passes" / "eager.py").write_text("from telamalloc.runtime.show import plot\n")
    (tmp_path / "passes" / "lazy.py").write_text("def draw():\n    from telamalloc.runtime.show import plot\n")
    assert violations("passes", ("telamalloc.runtime.show",), root=tmp_path, top_level_only=True) == [
        "passes/eager.py imports telamalloc.runtime.show", "passes/eager.py imports telamalloc.runtime.show.plot"]
    (tmp_path / "passes" / "peek.py").write_text("from telamalloc.runtime.interp.machine import _scalar\n")
    (tmp_path / "runtime" / "alloc" / "kernel.py").write_text("from telamalloc.runtime.alloc import _search\n")
    assert private_imports(tmp_path) == ["passes/peek.py imports telamalloc.runtime.interp.machine._scalar"]


def test_the_allocator_and_presentation_load_no_xdsl():
    code = ("import sys, telamalloc, telamalloc.runtime.alloc.api, telamalloc.batch, "
            "telamalloc.runtime.alloc.portfolio, telamalloc.runtime.alloc.generators.tracegen, "
            "telamalloc.runtime.show.report, telamalloc.runtime.show.progress; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'xdsl'))")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]"


def test_planning_loads_no_presentation():
    code = ("import sys, telamalloc.passes, telamalloc.tools.tela_opt; "
            "print(sorted(m for m in sys.modules if m.startswith('telamalloc.runtime.show') or m == 'matplotlib'))")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]"
