"""The registry is the one list of methods: docs table, knob names, flags and checks agree with it."""

import re
from pathlib import Path

import pytest

from oversmooth.errors import UsageError
from oversmooth.mitigations.registry import METHODS, knob_owners, make_knobs

DOCS = Path(__file__).parent.parent / "docs" / "methods.md"
NOT_METHODS = {"softmax", "norm", "ln_sign"}  # table rows that are settings, not registry methods


def table_rows() -> dict[str, str]:
    rows = re.findall(r"^\| `(\w+)` \|(.*)$", DOCS.read_text().split("## Details")[0], flags=re.M)
    return dict(rows)


def test_docs_table_lists_exactly_the_registry_with_its_defaults():
    rows = table_rows()
    assert set(rows) - NOT_METHODS == set(METHODS)
    for name, m in METHODS.items():
        knob_column = rows[name].rsplit("|", 2)[-2]
        for f in m.fields():
            assert f"`{f.name}`" in knob_column, (name, f.name)
            if not isinstance(f.default, bool):
                default = f'"{f.default}"' if isinstance(f.default, str) else f"{f.default:g}"
                assert re.search(rf"`{f.name}`[^|]*?\({re.escape(default)}", knob_column) or \
                    f"({re.escape(default)}" in knob_column, (name, f.name, default)


def test_every_knob_has_one_global_name_help_and_a_valid_default():
    for scope in ("train", "patch", None):
        knob_owners(scope)  # raises on a clash
    for name, m in METHODS.items():
        make_knobs(name, {})
        for f in m.fields():
            assert f.metadata["help"], (name, f.name)


@pytest.mark.parametrize("name", [n for n, m in METHODS.items() if m.zero])
def test_zero_settings_are_valid_knobs(name):
    make_knobs(name, METHODS[name].zero)


def test_range_checks_name_the_knob_and_the_range():
    with pytest.raises(UsageError, match=r"de-escalation tau must be a finite number in \[0, 1\], got 2"):
        make_knobs("deescalate", {"tau": 2.0})
    with pytest.raises(UsageError, match="neutreno takes lam, not gamma"):
        make_knobs("neutreno", {"gamma": 1.0})
