"""Whether `python -m NAME` would find a module, asked before anything is run or written.

`tenprof run -m NAME` used to start the script's process, record an empty profile and then learn from
runpy that NAME does not exist. This looks the name up the way runpy will, without importing anything
of the user's: the top-level name through the import system's finders (an editable install's finder
included), each further part through the file finder on its parent package's folders (importing a
parent package would run its code in tenprof's process). Only a definite "not there" is reported;
anything this cannot tell is left for runpy to say.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence

_INSTALL_HINT = "install it in this Python, or run tenprof in the folder that holds it"


def module_problem(name: str, search_path: Sequence[str]) -> str:
    """Why `python -m name` cannot run, with `search_path` as its sys.path; "" when it can (or when this
    cannot tell)."""
    parts = name.split(".")
    if not all(part.isidentifier() for part in parts):
        return f"{name!r} is not a module name (give a file path without -m to run a script)"
    spec = _top_level_spec(parts[0], search_path)
    if spec is None:
        return f"no module named {parts[0]}; {_INSTALL_HINT}"
    for depth, part in enumerate(parts[1:], start=1):
        locations = spec.submodule_search_locations
        if locations is None:  # a module may still put others in sys.modules when imported (os.path)
            return ""
        found = importlib.machinery.PathFinder.find_spec(part, list(locations))
        if found is None:
            return f"no module named {'.'.join(parts[: depth + 1])}; {_INSTALL_HINT}"
        spec = found
    package = spec.submodule_search_locations
    if package is not None and importlib.machinery.PathFinder.find_spec("__main__", list(package)) is None:
        return f"{name} is a package without a __main__ module; give one of its modules (-m {name}.module)"
    return ""


def _top_level_spec(name: str, search_path: Sequence[str]) -> importlib.machinery.ModuleSpec | None:
    """The spec of a top-level module as the script's process would find it (its sys.path: the
    current folder first), through every finder of this interpreter. Nothing is imported."""
    if name in sys.builtin_module_names:
        return importlib.machinery.ModuleSpec(name, None)
    saved = sys.path[:]
    sys.path[:] = list(search_path)
    try:
        cached = sys.modules.get(name)
        if cached is not None and getattr(cached, "__spec__", None) is not None:
            return cached.__spec__
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return importlib.machinery.ModuleSpec(name, None)  # cannot tell: let runpy say
    finally:
        sys.path[:] = saved
