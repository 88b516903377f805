"""Install hints for the optional extras (`plot`, `onnx`, `mlir`, `dask`, `iree`).

telamalloc is installed from a checkout, not from a package index, so a hint such as
`pip install 'telamalloc[onnx]'` would fail. The hint names the extra's own requirements,
read from the installed distribution's metadata (the pins of `pyproject.toml`), which
install into the running environment whatever way telamalloc got there, and the checkout
form as the alternative.
"""

from __future__ import annotations

import importlib.metadata
import re
import shlex

_EXTRA_MARKER = re.compile(r"""^(?P<requirement>[^;]+);\s*extra\s*==\s*["'](?P<extra>[\w.-]+)["']\s*$""")


def extra_requirements(extra: str) -> list[str]:
    """The requirements that the extra `extra` adds, e.g. `['onnx==1.23.2']` (none if unknown)."""
    try:
        requirements = importlib.metadata.requires("telamalloc") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    found = []
    for line in requirements:
        match = _EXTRA_MARKER.match(line)
        if match and match["extra"] == extra:
            found.append(match["requirement"].strip())
    return found


def install_hint(extra: str) -> str:
    """`install the 'onnx' extra: pip install 'onnx==1.23.2' (or, from a telamalloc checkout, ...)`."""
    checkout = f"pip install '.[{extra}]'"
    requirements = extra_requirements(extra)
    if not requirements:
        return f"install the '{extra}' extra: from a telamalloc checkout, {checkout}"
    packages = " ".join(shlex.quote(requirement) for requirement in requirements)
    return f"install the '{extra}' extra: pip install {packages} (or, from a telamalloc checkout, {checkout})"
