"""One name, one thing: a module name is used by one package unless it names a role every package
may have (its ``config``, ``report``, ``plots``...), a name two packages export is one object, and a
class name is defined by one module.

The clashes this guards against were real: ``saved_run.py`` in ``train/`` (reading a run back) and
in ``analyze/`` (measuring it), ``METHODS`` meaning the registry's records, the patchable names
and a formula table in three packages, and ``Evidence`` meaning both what ``oversmooth claims``
reads and one claim's pairs, two modules of ``claims/`` apart.
"""

from __future__ import annotations

import ast
import collections
import importlib
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "oversmooth"
#: module names that are a role, not a concept: each package may have its own
ROLES = {
    "__init__",
    "__main__",
    "attention",
    "config",
    "files",
    "null",
    "plots",
    "presets",
    "registry",
    "report",
    "run",
    "summary",
    "verdict",
}


def shared_module_names(package: pathlib.Path) -> dict[str, list[str]]:
    """Module file name -> the packages that hold one, for names outside ``ROLES`` held by more than one."""
    where = collections.defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        if path.stem not in ROLES:
            where[path.stem].append(str(path.parent.relative_to(package.parent)))
    return {name: packages for name, packages in where.items() if len(packages) > 1}


def test_a_module_name_belongs_to_one_package():
    assert shared_module_names(PACKAGE) == {}


def test_the_module_name_check_finds_a_clash(tmp_path):
    for path in ("pkg/train/saved_run.py", "pkg/analyze/saved_run.py", "pkg/analyze/report.py", "pkg/study/report.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert shared_module_names(tmp_path / "pkg") == {"saved_run": ["pkg/analyze", "pkg/train"]}


def exported(package: str) -> dict[str, object]:
    """What ``oversmooth.<package>`` exports (its ``__all__``), name -> object."""
    module = importlib.import_module(f"oversmooth.{package}")
    return {name: getattr(module, name) for name in getattr(module, "__all__", ())}


def test_a_name_two_packages_export_is_one_object():
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    owners = collections.defaultdict(dict)
    for package in packages:
        for name, value in exported(package).items():
            owners[name][package] = value
    clashes = {name: sorted(by) for name, by in owners.items() if len({id(value) for value in by.values()}) > 1}
    assert clashes == {}


def shared_class_names(package: pathlib.Path) -> dict[str, list[str]]:
    """Class name -> the modules that define one at their top level, for names defined by more than one."""
    where = collections.defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                where[node.name].append(str(path.relative_to(package.parent)))
    return {name: modules for name, modules in where.items() if len(modules) > 1}


def test_a_class_name_belongs_to_one_module():
    assert shared_class_names(PACKAGE) == {}


def test_the_class_name_check_finds_a_clash(tmp_path):
    (tmp_path / "pkg" / "claims").mkdir(parents=True)
    (tmp_path / "pkg" / "claims" / "evidence.py").write_text("class Evidence:\n    pass\n")
    (tmp_path / "pkg" / "claims" / "gathering.py").write_text(
        "from dataclasses import dataclass\n\n\n@dataclass\nclass Evidence:\n    values: tuple\n"
    )
    (tmp_path / "pkg" / "claims" / "holm.py").write_text("def Evidence():\n    class Inner:\n        pass\n")
    assert shared_class_names(tmp_path / "pkg") == {"Evidence": ["pkg/claims/evidence.py", "pkg/claims/gathering.py"]}
