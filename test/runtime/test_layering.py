"""The package's import rules: the layout shows the architecture (collect -> solve -> apply).

Read from the source (every `import` and `from ... import`, at any depth, as the AST has
them) and checked in a fresh process for what actually gets loaded:
- the allocator (`runtime/alloc/`) imports no xDSL and nothing of dialects, passes, the
  interpreter, presentation, verification, interop, importers or tools;
- presentation (`runtime/show/`) imports the allocator only;
- the interpreter (`runtime/interp/`) never imports passes, tools or verification, and its
  kernel library (`kernels.py`, `detmath.py`) imports nothing but numpy;
- dialects import nothing of passes or tools; no library imports a driver (`tools/`).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, absolute (relative imports resolved against the package)."""
    package = ["telamalloc", *path.relative_to(ROOT).parent.parts]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def sources(folder: str) -> list[Path]:
    files = sorted((ROOT / folder).rglob("*.py")) + sorted((ROOT / folder).rglob("*.pyx"))
    assert files, folder
    return files


def violations(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    bad = []
    for path in sources(folder):
        for module in imported_modules(path) if path.suffix == ".py" else _cython_imports(path):
            if any(module == prefix or module.startswith(prefix + ".") for prefix in forbidden):
                bad.append(f"{path.relative_to(ROOT)} imports {module}")
    return bad


def _cython_imports(path: Path) -> set[str]:
    found = set()
    for line in path.read_text().splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] in ("import", "from", "cimport"):
            found.add(words[1])
    return found


IR = ("xdsl", "telamalloc.dialects", "telamalloc.passes", "telamalloc.tools", "telamalloc.interop",
      "telamalloc.importers", "telamalloc.verification", "telamalloc.ir_text", "telamalloc.universe")


@pytest.mark.parametrize("folder, forbidden", [
    ("runtime/alloc", IR + ("telamalloc.runtime.interp", "telamalloc.runtime.show")),
    ("runtime/show", IR + ("telamalloc.runtime.interp",)),
    ("runtime/interp", ("telamalloc.passes", "telamalloc.tools", "telamalloc.verification", "telamalloc.interop",
                        "telamalloc.importers", "telamalloc.runtime.show")),
    ("dialects", ("telamalloc.passes", "telamalloc.tools", "telamalloc.runtime.interp", "telamalloc.verification")),
    ("passes", ("telamalloc.tools", "telamalloc.runtime.interp", "telamalloc.verification")),
    ("interop", ("telamalloc.tools",)),
    ("importers", ("telamalloc.tools",)),
])
def test_import_rules(folder, forbidden):
    assert violations(folder, forbidden) == []


def test_the_kernel_library_imports_only_numpy():
    for name in ("kernels.py", "detmath.py"):
        modules = imported_modules(ROOT / "runtime" / "interp" / name)
        outside = {m for m in modules if m.split(".")[0] not in ("numpy", "__future__", "collections", "dataclasses",
                                                                   "fractions", "math", "typing")
                   and m not in ("telamalloc.runtime.interp", "telamalloc.runtime.interp.detmath")}
        assert outside == set(), name


def test_the_rules_would_catch_a_violation(tmp_path):
    # The checker itself: a file that imports a forbidden module is reported.
    bad = ROOT / "runtime" / "alloc" / "_layering_probe.py"
    bad.write_text("from xdsl.ir import Operation\n")
    try:
        assert sorted(violations("runtime/alloc", IR)) == ["runtime/alloc/_layering_probe.py imports xdsl.ir",
                                                   "runtime/alloc/_layering_probe.py imports xdsl.ir.Operation"]
    finally:
        bad.unlink()


def test_the_allocator_and_presentation_load_no_xdsl():
    code = ("import sys, telamalloc, telamalloc.runtime.alloc.api, telamalloc.runtime.alloc.batch, "
            "telamalloc.runtime.alloc.portfolio, telamalloc.runtime.alloc.generators.tracegen, "
            "telamalloc.runtime.show.report, telamalloc.runtime.show.progress; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'xdsl'))")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]"
