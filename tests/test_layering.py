"""Which package may import which: the map in docs/design.md (its ``toml`` block with ``[may_import]``)
holds for every import in src/oversmooth/, those inside functions and ``TYPE_CHECKING`` blocks included.

A unit is a subpackage of ``oversmooth`` (``hf``, ``analyze``, ...), ``base`` (the loose modules at the
top and ``oversmooth/__init__``) or ``__main__``. ``[public_only]`` names, per unit, the packages it may
import only through their ``__init__`` (``from oversmooth.hf import load``, never ``oversmooth.hf.load``).
"""

from __future__ import annotations

import ast
import functools
import pathlib
import re
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "design.md"


def read_map(text: str) -> dict:
    """The ``toml`` block of ``text`` that has a ``[may_import]`` table, parsed."""
    blocks = [block for block in re.findall(r"```toml\n(.*?)```", text, re.S) if "[may_import]" in block]
    assert len(blocks) == 1, "docs/design.md needs exactly one toml block with [may_import]"
    return tomllib.loads(blocks[0])


def module_name(path: pathlib.Path, src: pathlib.Path) -> str:
    """``src/oversmooth/hf/load.py`` -> ``oversmooth.hf.load``; a package's ``__init__`` -> the package."""
    parts = path.relative_to(src).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit_of(module: str, src: pathlib.Path) -> str:
    """The unit of a module name: its subpackage under ``oversmooth``, ``__main__``, or ``base``."""
    parts = module.split(".")
    if len(parts) > 1 and (src / "oversmooth" / parts[1]).is_dir():
        return parts[1]
    return "__main__" if parts[1:2] == ["__main__"] else "base"


@functools.cache
def names_bound_by(init: pathlib.Path) -> frozenset[str]:
    """The names a package's ``__init__.py`` binds at its top (imports, definitions, assignments)."""
    if not init.is_file():
        return frozenset()
    names = set()
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
    return frozenset(names)


def imported_modules(path: pathlib.Path, src: pathlib.Path) -> list[tuple[int, str]]:
    """``(line, module)`` for every ``oversmooth`` import in the file, anywhere in it; relative imports
    resolved; ``from package import name`` gives the package when its ``__init__`` binds ``name`` (its
    public API), else the submodule ``name`` if there is one."""
    here = module_name(path, src).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            for alias in node.names:
                folder = src.joinpath(*base.split("."))
                submodule = (folder / alias.name).is_dir() or (folder / f"{alias.name}.py").is_file()
                exported = alias.name in names_bound_by(folder / "__init__.py")
                found.append((node.lineno, f"{base}.{alias.name}" if submodule and not exported else base))
    return [(line, name) for line, name in found if name == "oversmooth" or name.startswith("oversmooth.")]


def violations(src: pathlib.Path, rules: dict) -> list[str]:
    """One line per import that the map forbids, ``path:line: unit imports module (...)``."""
    allowed, public_only = rules["may_import"], rules.get("public_only", {})
    found = []
    for path in sorted((src / "oversmooth").rglob("*.py")):
        importer = unit_of(module_name(path, src), src)
        where = path.relative_to(src.parent) if src.parent in path.parents else path
        for line, target in imported_modules(path, src):
            unit = unit_of(target, src)
            if unit != importer and unit not in allowed.get(importer, ()):
                found.append(
                    f"{where}:{line}: {importer} imports {target} "
                    f"({importer} may import: {', '.join(allowed.get(importer, ())) or 'nothing'})"
                )
            elif unit in public_only.get(importer, ()) and target != f"oversmooth.{unit}":
                found.append(
                    f"{where}:{line}: {importer} imports {target}: import it from oversmooth.{unit} (its public API)"
                )
    return found


def import_cycles(src: pathlib.Path) -> list[list[str]]:
    """The import cycles among the modules of ``src/oversmooth`` (every import, those inside
    functions too): each strongly connected component of more than one module, sorted. A package's
    ``__init__`` counts as the package's module; a module importing its own package is no edge."""
    graph = {module_name(path, src): set() for path in (src / "oversmooth").rglob("*.py")}
    for path in (src / "oversmooth").rglob("*.py"):
        here = module_name(path, src)
        graph[here] |= {
            target
            for _, target in imported_modules(path, src)
            if target in graph and target != here and not here.startswith(target + ".")
        }
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node), on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)


def test_no_module_imports_itself_through_others():
    assert import_cycles(ROOT / "src") == []


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import(tmp_path):
    tree = {
        "oversmooth/__init__.py": "",
        "oversmooth/analyze/__init__.py": "",
        "oversmooth/analyze/a.py": "from oversmooth.analyze import b\n",
        "oversmooth/analyze/b.py": "def f():\n    from oversmooth.analyze.c import g\n",
        "oversmooth/analyze/c.py": "from . import a\n",
        "oversmooth/analyze/d.py": "from . import a\n",
    }
    for name, text in tree.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert import_cycles(tmp_path) == [["oversmooth.analyze.a", "oversmooth.analyze.b", "oversmooth.analyze.c"]]


def test_every_import_in_the_tree_keeps_the_map():
    assert violations(ROOT / "src", read_map(DESIGN.read_text())) == []


def test_the_map_names_every_unit_and_only_those():
    src = ROOT / "src"
    units = {unit_of(module_name(path, src), src) for path in (src / "oversmooth").rglob("*.py")}
    rules = read_map(DESIGN.read_text())
    assert set(rules["may_import"]) == units
    named = {unit for listed in rules["may_import"].values() for unit in listed}
    named |= {unit for listed in rules.get("public_only", {}).values() for unit in listed}
    assert named <= units


RULES = {
    "may_import": {"base": ["base"], "hf": ["base"], "analyze": ["base", "hf"]},
    "public_only": {"analyze": ["hf"]},
}
ALLOWED = {
    "oversmooth/analyze/fine.py": "from oversmooth.hf import load\nfrom oversmooth import errors\n"
    "from . import quality\nimport oversmooth\n"
}


@pytest.mark.parametrize(
    "path, code, expected",
    [
        (
            "oversmooth/hf/load.py",
            "from oversmooth.analyze.quality import Quality\n",
            "load.py:1: hf imports oversmooth.analyze.quality (hf may import: base)",
        ),
        (
            "oversmooth/hf/load.py",
            "def f():\n    import oversmooth.analyze\n",
            "load.py:2: hf imports oversmooth.analyze (hf may import: base)",
        ),
        (
            "oversmooth/hf/load.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..analyze import quality\n",
            "load.py:3: hf imports oversmooth.analyze.quality (hf may import: base)",
        ),
        (
            "oversmooth/hf/load.py",
            "from oversmooth import analyze\n",
            "load.py:1: hf imports oversmooth.analyze (hf may import: base)",
        ),
        (
            "oversmooth/errors.py",
            "from oversmooth.hf import load\n",
            "errors.py:1: base imports oversmooth.hf (base may import: base)",
        ),
        (
            "oversmooth/analyze/quality.py",
            "from ..hf.load import load\n",
            "quality.py:1: analyze imports oversmooth.hf.load: import it from oversmooth.hf (its public API)",
        ),
    ],
    ids=["absolute", "in a function", "TYPE_CHECKING, relative", "from the root", "base upwards", "hf internals"],
)
def test_the_checker_flags_a_wrong_import(tmp_path, path, code, expected):
    tree = {
        "oversmooth/__init__.py": "",
        "oversmooth/errors.py": "",
        "oversmooth/hf/__init__.py": "from oversmooth.hf.load import load\n",
        "oversmooth/hf/load.py": "",
        "oversmooth/analyze/__init__.py": "",
        "oversmooth/analyze/quality.py": "",
        **ALLOWED,
        path: code,
    }
    for name, text in tree.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = violations(tmp_path, RULES)
    assert len(found) == 1 and found[0].endswith(expected), found
