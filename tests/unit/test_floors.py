"""The floors of docs/design.md, read from the code: each module's imports, walked in its AST.

``cli`` -> ``service``, ``setup`` -> ``run`` -> ``executor`` -> ``survey`` -> ``sources``,
``platform`` (the API client only) -> ``snapshot`` -> ``plan``, ``report`` (pure) ->
``model``, ``config``. A module imports what is on its floor or below; the
pure rooms import no I/O library and no database, not even through another module of
syncd (their imports are followed), and the platform client imports no part of the
store.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

import syncd

PACKAGE = Path(syncd.__file__).parent

IO_LIBRARIES = ("httpx", "ldap3", "sqlalchemy", "sqlmodel", "sqlite3", "psycopg")
PURE = ("syncd.plan", "syncd.report", "syncd.model", "syncd.mapping", "syncd.spelling")
# What the API client may not import, directly or through another module of syncd: the
# store, a database driver, and every floor above it.
ABOVE_THE_CLIENT = (
    "syncd.snapshot",
    "sqlalchemy",
    "sqlmodel",
    "sqlite3",
    "psycopg",
    "syncd.survey",
    "syncd.executor",
    "syncd.run",
    "syncd.service",
    "syncd.setup",
    "syncd.cli",
)


# Top down; every module is on one (test_every_module_is_on_a_floor). The package
# ``syncd`` itself (its __init__) is on the last: BASE.
FLOORS = (
    ("syncd.cli",),
    # The entry points besides the command line: the service (the daemon, its status,
    # health and metrics), and getting started (new settings, the demo).
    ("syncd.service", "syncd.setup"),
    # A run and what is around it: its lock, lease, records, deliveries, recovery.
    ("syncd.run",),
    ("syncd.executor",),
    ("syncd.survey",),
    ("syncd.sources", "syncd.platform", "syncd.emulator"),
    ("syncd.snapshot", "syncd._gc", "syncd.access_token"),
    ("syncd.plan", "syncd.report"),
    ("syncd.model", "syncd.config", "syncd.mapping", "syncd.photos"),
    # What every floor uses: errors, logging, time, spelling, file ownership, package data.
    BASE := (
        "syncd.errors",
        "syncd.logs",
        "syncd.clock",
        "syncd.spelling",
        "syncd.ownership",
        "syncd.data",
    ),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of the tree but those under ``if TYPE_CHECKING:`` (never run)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and is_type_checking(node.test):
            stack += node.orelse
            continue
        stack += ast.iter_child_nodes(node)


@cache
def imports(module: str) -> frozenset[str]:
    """The modules this module imports at run time, wherever in it (a function's lazy
    import included), by their full dotted names."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in runtime_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            # ``from syncd.x import y``: y may be a module of its own.
            found.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES)
    return frozenset(found)


def owner(name: str) -> str | None:
    """The module of syncd that ``name`` is, or is in (None: not syncd's)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def reached(start: str) -> dict[str, list[str]]:
    """Every module ``start`` loads, directly or through syncd's modules, each with the
    chain of imports that gets there."""
    chains: dict[str, list[str]] = {start: [start]}
    stack = [start]
    while stack:
        current = stack.pop()
        for name in imports(current):
            own = owner(name)
            # Importing syncd.a.b runs syncd/__init__ and syncd/a/__init__ too.
            loaded = [name] if own is None else [own, *packages_of(own)]
            for target in loaded:
                if target not in chains:
                    chains[target] = [*chains[current], target]
                    if target in MODULES:
                        stack.append(target)
    return chains


def packages_of(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts)) if ".".join(parts[:n]) in MODULES]


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def rooms(*prefixes: str) -> list[str]:
    return [m for m in MODULES if within(m, prefixes)]


def breaches(start: str, forbidden: tuple[str, ...]) -> list[str]:
    return [
        " -> ".join(chain)
        for target, chain in sorted(reached(start).items())
        if within(target, forbidden)
    ]


def floor(module: str) -> int | None:
    if module == "syncd":  # the package's __init__: "syncd" as a room would hold them all
        return len(FLOORS) - 1
    return next((n for n, rooms in enumerate(FLOORS) if within(module, rooms)), None)


@pytest.mark.parametrize("module", MODULES)
def test_every_module_is_on_a_floor(module: str) -> None:
    """A new module says where it stands: add it to a floor of FLOORS (docs/design.md)."""
    assert floor(module) is not None, f"{module} is on no floor of FLOORS"


def test_a_module_on_no_floor_fails(tmp_path: Path) -> None:
    MODULES["syncd.nowhere"] = tmp_path / "nowhere.py"
    try:
        with pytest.raises(AssertionError, match=r"syncd\.nowhere is on no floor"):
            test_every_module_is_on_a_floor("syncd.nowhere")
    finally:
        del MODULES["syncd.nowhere"]


@pytest.mark.parametrize("module", MODULES)
def test_no_room_imports_from_a_floor_above_its_own(module: str) -> None:
    own = floor(module)
    assert own is not None
    above = []
    for name in sorted(imports(module)):
        target = owner(name)
        if target is not None and (level := floor(target)) is not None and level < own:
            above.append(target)
    assert above == []


@pytest.mark.parametrize("module", rooms("syncd.platform"))
def test_the_platform_client_imports_neither_the_store_nor_a_floor_above_it(module: str) -> None:
    assert breaches(module, ABOVE_THE_CLIENT) == []


@pytest.mark.parametrize("module", rooms(*PURE))
def test_the_pure_rooms_import_no_io_library_and_no_database(module: str) -> None:
    assert breaches(module, IO_LIBRARIES) == []


def test_the_check_sees_an_import_made_through_another_module(tmp_path: Path) -> None:
    """The walk itself: a chain through syncd's modules and a lazy import are found, an
    import under TYPE_CHECKING is not."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "from syncd.clock import now_ms\n"
        "if TYPE_CHECKING:\n"
        "    import httpx\n"
        "def later() -> None:\n"
        "    from syncd.platform import PlatformClient\n"
    )
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    MODULES["syncd.probe"] = path
    try:
        found = reached("syncd.probe")
    finally:
        del MODULES["syncd.probe"]
        imports.cache_clear()
    assert "syncd.clock" in found and "syncd.platform.client" in found
    # httpx through syncd.platform: a direct import (the TYPE_CHECKING one) would be
    # found first, as a chain of two.
    assert len(found["httpx"]) > 2 and found["httpx"][1] == "syncd.platform"


def test_the_token_fetch_ends_before_other_processes_stop_waiting_for_it() -> None:
    """The client stops retrying a token fetch (under the store's token lock) after half
    the time other processes wait for that lock: the two constants live on two floors."""
    from syncd.platform._requests import TOKEN_RETRY_DEADLINE
    from syncd.snapshot import BUSY_TIMEOUT_MS

    assert 0 < TOKEN_RETRY_DEADLINE <= BUSY_TIMEOUT_MS / 1000 / 2


# ---------------------------------------------------------------- import circles


def module_edges(module: str) -> frozenset[str]:
    """The modules of syncd this one imports at run time (lazy imports included). ``from
    package import submodule`` is an edge to the submodule alone: the package is being
    imported already, its __init__ is not run again for it."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in runtime_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            submodules = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
            found.update(submodules)
            if len(submodules) < len(node.names):
                found.add(base)
    return frozenset(o for name in found if (o := owner(name)) is not None and o != module)


def circles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


# The circle left, to be broken (issue 34), none to be added: the store's engine and its
# statements (sql <-> engine; tables -> dates -> engine -> tables; the branch that makes
# the store a StateStore breaks it).
KNOWN_CIRCLES: list[list[str]] = []


def test_no_new_import_circle() -> None:
    found = circles({m: module_edges(m) for m in MODULES})
    assert [c for c in found if c not in KNOWN_CIRCLES] == []
    assert [c for c in KNOWN_CIRCLES if c not in found] == []  # broken: take it off the list


def test_a_circle_is_found() -> None:
    graph = {
        "a": frozenset({"b"}),
        "b": frozenset({"c"}),
        "c": frozenset({"a"}),
        "d": frozenset({"a"}),
        "e": frozenset({"e"}),
    }
    assert circles(graph) == [["a", "b", "c"]]
