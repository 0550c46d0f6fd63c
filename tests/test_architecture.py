"""The shape of `layers/` as docs/architecture.md states it: its map lists every module and
nothing that is gone, imports follow the stated layers and never go in a circle, no file or
class outgrows the size a reader can hold, and Lua that several scripts share is written once."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ROOT / "layers"
PACKAGE_ROOT = LAYERS / "shared" / "python"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
MAX_FILE_LINES = 500
MAX_CLASS_LINES = 300
_NAME = re.compile(r"^[A-Za-z0-9_.-]+(/|\.py|\.mk|\.lua|\.sql)$")


def _section(title: str) -> list[str]:
    lines = ARCHITECTURE.read_text().splitlines()
    start = lines.index(f"## {title}") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def _mapped_paths() -> list[str]:
    """The paths the map's tree names (relative to the repository), in order."""
    block = _section("Map of `layers/`")
    inside = block[block.index("```text") + 1 :]
    inside = inside[: inside.index("```")]
    stack: list[tuple[int, str]] = []
    paths: list[str] = []
    for line in inside:
        indent = len(line) - len(line.lstrip(" "))
        name = line.split()[0] if line.strip() else ""
        if not _NAME.match(name):
            continue  # a description carried onto the next line
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = "".join(part for _, part in stack) + name
        paths.append(path.rstrip("/"))
        if name.endswith("/"):
            stack.append((indent, name))
    return paths


def _present_paths() -> set[str]:
    """Every Python module of the layers but package markers, every folder holding one, and
    every folder and file directly in layers/."""
    found = {str(p.relative_to(ROOT)) for p in LAYERS.iterdir() if not p.name.startswith(".")}
    for module in LAYERS.rglob("*.py"):
        if "__pycache__" in module.parts:
            continue
        if module.name != "__init__.py":
            found.add(str(module.relative_to(ROOT)))
        for folder in module.relative_to(ROOT).parents:
            if folder != Path("."):
                found.add(str(folder))
    return found


def test_the_architecture_document_opens_with_the_map_of_layers() -> None:
    headings = [line for line in ARCHITECTURE.read_text().splitlines() if line.startswith("## ")]
    assert headings[0] == "## Map of `layers/`"


def test_the_map_lists_every_module_and_nothing_that_is_gone() -> None:
    mapped = _mapped_paths()
    assert len(mapped) == len(set(mapped)), "a path is listed twice"
    present = _present_paths()
    assert sorted(present - set(mapped)) == [], "modules missing from the map"
    gone = [p for p in mapped if not (ROOT / p).exists()]
    assert gone == [], "the map lists what is not there"


# --- imports ------------------------------------------------------------------------------
def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE_ROOT.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(PACKAGE_ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of others, every one (inside functions and TYPE_CHECKING too)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    child = f"{node.module}.{alias.name}"
                    found.add(child if child in modules else node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def _layers(lines: list[str], prefix: str = "") -> list[list[str]]:
    """A numbered list's layers, lowest first, each the module prefixes side by side in it."""
    return [
        [prefix + name for name in re.findall(r"`([\w.]+)`", line)]
        for line in lines
        if re.match(r"^\d+\. ", line)
    ]


def _stated_orders() -> list[list[list[str]]]:
    lines = _section("Layers")
    orders: list[list[list[str]]] = []
    current: list[str] = []
    prefix = ""
    for line in lines:
        inside = re.match(r"^Inside `([\w.]+)`:", line)
        if inside:
            orders.append(_layers(current, prefix))
            current, prefix = [], inside.group(1) + "."
        else:
            current.append(line)
    orders.append(_layers(current, prefix))
    return orders


def _place(module: str, layers: list[list[str]]) -> tuple[int, str] | None:
    best: tuple[int, str] | None = None
    for level, group in enumerate(layers):
        for name in group:
            inside = module == name or module.startswith(name + ".")
            if inside and (best is None or len(name) > len(best[1])):
                best = (level, name)
    return best


def test_imports_follow_the_layers_the_architecture_states() -> None:
    graph = _imports(_modules())
    orders = _stated_orders()
    assert [len(order) for order in orders] == [5, 5], "the layers section lost a list"
    wrong = []
    for order in orders:
        for importer, imported in ((a, b) for a, bs in graph.items() for b in bs):
            here, there = _place(importer, order), _place(imported, order)
            if here is None or there is None or here[1] == there[1]:
                continue
            if there[0] >= here[0]:  # a later layer, or one beside it
                wrong.append(f"{importer} -> {imported}")
    assert wrong == []
    placed = [m for m in graph if _place(m, orders[0]) is None]
    assert sorted(placed) == ["leaderboard", "leaderboard.stores"], "a module outside the layers"


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_no_module_of_the_layers_imports_in_a_circle() -> None:
    assert _cycle(_imports(_modules())) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []


# --- sizes --------------------------------------------------------------------------------
def _python_files() -> Iterator[Path]:
    yield from (p for p in LAYERS.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("path", list(_python_files()), ids=lambda p: str(p.relative_to(LAYERS)))
def test_no_file_or_class_of_the_layers_outgrows_a_reader(path: Path) -> None:
    text = path.read_text()
    assert len(text.splitlines()) <= MAX_FILE_LINES
    classes = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ClassDef)]
    big = [(c.name, c.end_lineno - c.lineno + 1) for c in classes if c.end_lineno]
    assert [(name, size) for name, size in big if size > MAX_CLASS_LINES] == []


# --- shared Lua ---------------------------------------------------------------------------
def _lua_functions(path: Path) -> Iterator[tuple[str, str]]:
    """(name, body with white space folded) of each top-level `local function` of a script."""
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        start = re.match(r"^local function (\w+)", line)
        if not start:
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j] == "end")
        body = " ".join(" ".join(lines[i + 1 : end]).split())
        yield start.group(1), body


def test_lua_that_several_scripts_need_is_written_once() -> None:
    scripts = list(LAYERS.rglob("*.lua"))
    assert len(scripts) > 20
    seen: dict[str, str] = {}
    copies = []
    for script in scripts:
        for name, body in _lua_functions(script):
            where = f"{script.relative_to(LAYERS)}:{name}"
            if body in seen:
                copies.append((seen[body], where))
            seen.setdefault(body, where)
    assert copies == []


def test_every_shared_fragment_a_script_names_exists_and_is_used() -> None:
    shared = {p.stem for p in (PACKAGE_ROOT / "leaderboard/stores/redis/lua_shared").glob("*.lua")}
    named: set[str] = set()
    for script in LAYERS.rglob("*.lua"):
        first = script.read_text().split("\n", 1)[0]
        uses = re.match(r"--\s*uses:\s*([a-z_, ]+)", first)
        if uses:
            named.update(n.strip() for n in uses.group(1).split(",") if n.strip())
    assert named == shared


# --- sharding is the store's business -----------------------------------------------------
def _branches_on_sharding(path: Path) -> list[int]:
    """Lines of `if`s (statements, expressions, comprehension filters) whose test names shards."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        tests = []
        if isinstance(node, ast.If | ast.IfExp | ast.While):
            tests.append(node.test)
        elif isinstance(node, ast.comprehension):
            tests.extend(node.ifs)
        for test in tests:
            names = {n.attr for n in ast.walk(test) if isinstance(n, ast.Attribute)}
            names |= {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
            names |= {
                n.value
                for n in ast.walk(test)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            }
            if any("shard" in n for n in names):
                found.append(test.lineno)
    return found


def test_no_service_or_handler_branches_on_sharding() -> None:
    """The board's layout is chosen in the store (stores/redis/index/reads.py); services and
    handlers hand a board's shard count on as data, never decide by it."""
    places = sorted((PACKAGE_ROOT / "leaderboard" / "services").glob("*.py"))
    places += sorted((ROOT / "functions").glob("*/app.py"))
    assert len(places) > 15
    found = {str(p.relative_to(ROOT)): lines for p in places if (lines := _branches_on_sharding(p))}
    assert found == {}
    index = PACKAGE_ROOT / "leaderboard" / "stores" / "redis" / "index" / "reads.py"
    assert _branches_on_sharding(index), "the one place that chooses is found by this check"
