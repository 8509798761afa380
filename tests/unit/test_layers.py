"""The layers' import rule (ARCHITECTURE.md, "Layers and the report model"), read from the source.

Imports run one way: cli -> report -> renderers -> analyses -> store and cli -> record -> capture, record ->
importers -> store, with tenprof.core (and the top-level errors and sourcefiles) neutral below them all:
capture (the code inside the script's process) imports no importer and no store. Every import counts:
top-level, inside functions and under TYPE_CHECKING, since a lazy import is still a dependency. The
modules are parsed, not imported, so this stays fast and sees imports that never run here.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "tenprof"

# The layer each module belongs to: its subpackage, or one of these for the top-level modules.
LAYER_PACKAGES = ("core", "store", "importers", "analyses", "renderers", "report", "capture", "record", "cli")
TOP_LEVEL = {
    "tenprof": "api",  # the public API (load, scope, step, profile): for users, not for tenprof itself
    "tenprof.__main__": "cli",
    "tenprof.errors": "core",  # one exception family every layer raises
    "tenprof.sourcefiles": "core",  # which files are the user's: capture and importers both ask
}

MAY_IMPORT: dict[str, set[str]] = {
    "core": {"core"},
    "store": {"core", "store"},
    "importers": {"core", "store", "importers"},
    "analyses": {"core", "store", "analyses"},
    "renderers": {"core", "store", "analyses", "renderers"},
    "capture": {"core", "capture"},  # the script's process writes raw files, never a table (no pyarrow there)
    "report": {"core", "store", "analyses", "renderers", "report"},
    "record": {"core", "store", "importers", "capture", "record"},
    "cli": {"core", "store", "importers", "analyses", "renderers", "report", "capture", "record", "cli"},
    "api": {"core", "store", "capture", "record"},
}

# Imports that break the rule, each with its reason; none today. Each must still occur (the test fails
# when one is gone, so the list cannot go stale).
ALLOWED: set[tuple[str, str]] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def layer(module: str) -> str:
    if module in TOP_LEVEL:
        return TOP_LEVEL[module]
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in LAYER_PACKAGES:
        return parts[1]
    raise AssertionError(f"{module} belongs to no layer: add its package to LAYER_PACKAGES or it to TOP_LEVEL")


def _known(name: str) -> str:
    """The module an imported dotted name lives in (`tenprof.core.units.size` -> `tenprof.core.units`)."""
    parts = name.split(".")
    while parts and ".".join(parts) not in modules():
        parts.pop()
    return ".".join(parts) or name


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


@cache
def imports_of(module: str) -> frozenset[str]:
    """Every tenprof module `module` imports, and every other top-level package (torch, numpy, ...)."""
    path = modules()[module]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(_known(a.name) if a.name.split(".")[0] == "tenprof" else a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, path, node)
            if source.split(".")[0] != "tenprof":
                found.add(source)
                continue
            for alias in node.names:
                found.add(_known(f"{source}.{alias.name}"))
    return frozenset(found)


def _short(module: str) -> str:
    """`tenprof.importers.intervals` -> `importers.intervals`, as ALLOWED names them."""
    return module.removeprefix("tenprof.")


@cache
def violations() -> frozenset[tuple[str, str]]:
    """(importing module, imported module) for every import against MAY_IMPORT, named as in ALLOWED."""
    out = set()
    for module in modules():
        for target in imports_of(module):
            if (
                target.split(".")[0] == "tenprof"
                and target != module
                and layer(target) not in MAY_IMPORT[layer(module)]
            ):
                out.add((module, target))
    return frozenset((_short(a), _short(b)) for a, b in out)


def _with_layer(short: str) -> str:
    module = short if short == "tenprof" else f"tenprof.{short}"
    return f"{short} ({layer(module)})"


def test_every_module_has_a_layer() -> None:
    for module in modules():
        assert layer(module) in MAY_IMPORT


def test_imports_run_one_way() -> None:
    unexpected = sorted(violations() - ALLOWED)
    assert not unexpected, "imports against the layers (see ARCHITECTURE.md), importer -> imported:\n" + "\n".join(
        f"  {_with_layer(a)} -> {_with_layer(b)}" for a, b in unexpected
    )


def test_allowed_exceptions_still_occur() -> None:
    stale = sorted(ALLOWED - violations())
    assert not stale, f"no longer imported, remove from ALLOWED: {stale}"


def test_only_capture_imports_torch() -> None:
    # Loading and reporting a profile must work where torch is not installed.
    offenders = sorted(
        m for m in modules() if layer(m) != "capture" and {"torch", "triton"} & {i.split(".")[0] for i in imports_of(m)}
    )
    assert not offenders, f"torch imported outside capture: {offenders}"


def test_findings_carry_numbers_and_renderers_format_them() -> None:
    # A finding's text holds its values as quantities (core.quantities), written out by the renderers;
    # the checks never format a duration or a size themselves.
    checks = [m for m in modules() if m.startswith("tenprof.analyses.findings")]
    assert checks
    formatting = [m for m in checks if "tenprof.core.units" in imports_of(m)]
    assert not formatting, formatting
    assert any("tenprof.core.quantities" in imports_of(m) for m in checks)
