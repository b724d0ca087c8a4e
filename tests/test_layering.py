"""kgroup's import graph has no circles and no import runs from a lower layer up.

Every module of `kgroup/` and `commands/` (installed as `kgroup.commands`) is read with `ast`,
and every import of another kgroup module is an edge: at module level, inside a function, under
`if TYPE_CHECKING:` alike. An import written inside a function to dodge a circle is still the
circle; only the third-party imports kept lazy for start-up time (pyspark, matplotlib, ...) are
none of this test's business, and they are not edges.

Run it as a script to see the graph's faults, one per line:

    python tests/test_layering.py
"""

from __future__ import annotations

import ast
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Where each module's source lives: the `kgroup` package, and `commands/` which setuptools
# installs as `kgroup.commands` (pyproject.toml's package-dir).
SOURCES = {"kgroup": ROOT / "kgroup", "kgroup.commands": ROOT / "commands"}

# The layers, lowest first: each rank holds one or more layers, and a layer's name and the module
# prefixes it holds (the longest prefix that names a module decides its layer; `kgroup` stands for
# the package's own __init__ only, so a new top-level module must be given its layer). A module may import
# from its own layer and from any layer of a lower rank; never from a higher rank, nor from another
# layer of its own rank (layers side by side know nothing of each other).
#
# * leaves: the error codes, exit codes, stream writers and small helpers every package shares.
# * records, protocol, wire: the `__consumer_offsets` record format, the request schemas kafka-python
#   lacks, and the transport to a real cluster — data and bytes, no group logic; none needs another.
# * assignors: the partition assignors, pure functions over members and topics (and Connect's items):
#   the coordinator runs the server-side ones, clients and the simulator the client-side ones.
# * the embedded group coordinator, on records, protocol and assignors, in four ranks mirroring
#   Kafka's group coordinator:
#   - coordinator floor: the seam and registry (`group_types`), config, error codes and `runtime/` (log,
#     operation log, undo journal, timers, replay, metadata hash): what every group type stands on;
#   - offsets: `offsets/`, the offsets manager, which asks a group only through the seam;
#   - classic, consumer, connect: one package per group type, side by side — no type's package
#     imports another's, except where two types meet (SIDEWAYS below): the consumer group's
#     `migration` and `migration_upgrade` (classic <-> consumer) and Connect's `migration`
#     (classic <-> connect) convert between two types and may import `classic/`; and the consumer
#     group's `classic_members` answers classic-protocol requests, in the classic responses
#     (`classic.responses`);
#   - coordinator: the facade (`coordinator`, which lists the types' registrations, and `admin`'s
#     ListGroups/DeleteGroups, which see every type), and any new top-level module of the package.
# * views: what kgroup shows of a group, asked of a cluster or replayed from a dump into the
#   coordinator (`dump_replay`): the client's verbs and the decode wing's `--view state` tables show
#   the same views, so they sit below both.
# * decode: `decode-offsets` as a library: dumps (or a cluster's topic, over wire) to rows and state.
# * client, server: the operations verbs' library (which reads dumps with decode) and `kgroup serve`,
#   side by side.
# * sim: `kgroup simulate`; above server because the simulated broker takes `kgroup serve --config`'s
#   group.* settings through serve's own parser (server.config), so both refuse the same entries.
# * commands: the click front end, on top of everything.
LAYERS: list[dict[str, tuple[str, ...]]] = [
    {"leaves": ("kgroup", "kgroup.errors", "kgroup.kafka_errors", "kgroup.sizes", "kgroup.topic_names",
                "kgroup.writers")},
    {"records": ("kgroup.records",), "protocol": ("kgroup.protocol",), "wire": ("kgroup.wire",)},
    {"assignors": ("kgroup.assignors",)},
    {"coordinator floor": ("kgroup.coordinator.codes", "kgroup.coordinator.config", "kgroup.coordinator.group_types",
                           "kgroup.coordinator.runtime")},
    {"offsets": ("kgroup.coordinator.offsets",)},
    {"classic": ("kgroup.coordinator.classic",), "consumer": ("kgroup.coordinator.consumer",),
     "connect": ("kgroup.coordinator.connect",)},
    {"coordinator": ("kgroup.coordinator",)},
    {"views": ("kgroup.views",)},
    {"decode": ("kgroup.decode",)},
    {"client": ("kgroup.client",), "server": ("kgroup.server",)},
    {"sim": ("kgroup.sim",)},
    {"commands": ("kgroup.commands",)},
]
RANK = {layer: rank for rank, layers in enumerate(LAYERS) for layer in layers}

# (importer, imported module or package): the only imports allowed between layers side by side,
# where two group types meet (see the coordinator's ranks above).
SIDEWAYS = {
    ("kgroup.coordinator.consumer.migration", "kgroup.coordinator.classic"),
    ("kgroup.coordinator.consumer.migration_upgrade", "kgroup.coordinator.classic"),
    ("kgroup.coordinator.connect.migration", "kgroup.coordinator.classic"),
    ("kgroup.coordinator.consumer.classic_members", "kgroup.coordinator.classic.responses"),
}


def _allowed_sideways(importer: str, target: str) -> bool:
    return any(importer == a and (target == b or target.startswith(b + ".")) for a, b in SIDEWAYS)


def modules() -> dict[str, Path]:
    """Every module's dotted name and its file."""
    found: dict[str, Path] = {}
    for package, directory in SOURCES.items():
        for path in sorted(directory.rglob("*.py")):
            parts = list(path.relative_to(directory).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def _is_package(name: str, known: dict[str, Path]) -> bool:
    return name in known and known[name].name == "__init__.py"


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The kgroup module a dotted name refers to: the longest prefix that is a module."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return None


def imports_of(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The kgroup modules `module` imports, anywhere in its file."""
    found: set[str] = set()
    package = module if _is_package(module, known) else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name, known)
                if target:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if not (source == "kgroup" or source.startswith("kgroup.")):
                continue
            for alias in node.names:
                # `from kgroup.x import y` imports the module kgroup.x.y if there is one, else
                # the name y out of kgroup.x.
                target = _resolve(f"{source}.{alias.name}", known)
                if target != f"{source}.{alias.name}":
                    target = _resolve(source, known)
                if target:
                    found.add(target)
    found.discard(module)
    return found


@cache
def graph() -> dict[str, set[str]]:
    """Every module -> the kgroup modules it imports (read once per run)."""
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def layer_of(module: str) -> str:
    best, best_len = None, -1
    for layers in LAYERS:
        for layer, prefixes in layers.items():
            for prefix in prefixes:
                inside = module == prefix or (module.startswith(prefix + ".") and prefix != "kgroup")
                if inside and len(prefix) > best_len:
                    best, best_len = layer, len(prefix)
    if best is None:
        raise KeyError(f"{module} is in no layer: add its package to LAYERS in {__file__}")
    return best


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def upward_imports(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) where the imported module's layer is of a higher rank than the
    importer's, or another layer of the same rank."""
    found = []
    for importer, targets in edges.items():
        for target in targets:
            low, high = layer_of(importer), layer_of(target)
            if RANK[high] > RANK[low]:
                found.append((importer, target))
            elif RANK[high] == RANK[low] and high != low and not _allowed_sideways(importer, target):
                found.append((importer, target))
    return sorted(found)


def cycle_text(component: list[str], edges: dict[str, set[str]]) -> str:
    inside = set(component)
    links = sorted(f"{a} -> {b}" for a in component for b in edges[a] if b in inside)
    return f"circle of {len(component)}: " + ", ".join(component) + "\n    " + "\n    ".join(links)


def test_every_module_has_a_layer():
    for module in modules():
        layer_of(module)


def test_no_import_circles():
    edges = graph()
    found = cycles(edges)
    assert not found, f"{len(found)} import circle(s):\n" + "\n".join(
        cycle_text(component, edges) for component in found)


def test_no_upward_imports():
    found = upward_imports(graph())
    assert not found, f"{len(found)} upward import(s):\n" + "\n".join(
        f"{a} ({layer_of(a)}) imports {b} ({layer_of(b)})" for a, b in found)


def main() -> int:
    edges = graph()
    found_cycles = cycles(edges)
    found_upward = upward_imports(edges)
    for component in found_cycles:
        print(cycle_text(component, edges))
    for a, b in found_upward:
        print(f"upward: {a} ({layer_of(a)}) imports {b} ({layer_of(b)})")
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} imports, "
          f"{len(found_cycles)} circle(s), {len(found_upward)} upward import(s)")
    return 1 if found_cycles or found_upward else 0


if __name__ == "__main__":
    sys.exit(main())
