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
                if f.default is None:
                    default = "unset"
                else:
                    default = f'"{f.default}"' if isinstance(f.default, str) else f"{f.default:g}"
                assert (
                    re.search(rf"`{f.name}`[^|]*?\({re.escape(default)}", knob_column)
                    or f"({re.escape(default)}" in knob_column
                ), (name, f.name, default)


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


#: each method's module, written out by hand (not read from the registry)
MODULE_OF = {
    "symmetric": "symmetric",
    "spectral": "spectral",
    "value_residual": "value_residual",
    "attnscale": "attnscale",
    "neutreno": "neutreno",
    "featscale": "featscale",
    "deescalate": "deescalation",
    "contranorm": "contranorm",
    "layerscale": "layerscale",
    "rezero": "rezero",
    "mv_split": "mv_split",
    "deepnorm": "deepnorm",
    "sigma_reparam": "sigma_reparam",
    "gated_attention": "gated_attention",
    "softpick": "softpick",
    "registers": "registers",
    "sink_removal": "sink_removal",
    "massive_clip": "massive_clip",
}
MODULES = [
    f"oversmooth.mitigations.{name}"
    for name in (
        "contranorm",
        "neutreno",
        "spectral",
        "deescalation",
        "featscale",
        "attnscale",
        "symmetric",
        "value_residual",
        "layerscale",
        "rezero",
        "mv_split",
        "deepnorm",
        "sigma_reparam",
        "gated_attention",
        "softpick",
        "registers",
        "sink_removal",
        "massive_clip",
        "base",
        "knobs",
        "token_mean",
    )
]
# In a fresh interpreter: import the modules of ``first`` in order, then print each method's
# layer module and patcher module (None: no patch) as found by name through the registry.
LOOKUP = """
import importlib
for module in {first!r}:
    importlib.import_module(module)
from oversmooth.mitigations.registry import method
print(repr({{name: (method(name).layer and method(name).layer.__module__,
                    method(name).patcher and method(name).patcher.build.__module__)
            for name in {names!r}}}))
"""


def fresh_python(code: str) -> str:
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("first", [[], MODULES, MODULES[::-1]], ids=["registry-first", "modules-first", "reversed"])
def test_every_method_is_found_by_name_whatever_was_imported_first(first):
    found = eval(fresh_python(LOOKUP.format(first=first, names=list(MODULE_OF))))
    unpatchable = {"symmetric", "spectral", "value_residual", "rezero", "mv_split", "deepnorm", "softpick", "registers"}
    untrainable = {"sink_removal", "massive_clip"}
    assert found == {
        name: (
            None if name in untrainable else f"oversmooth.mitigations.{module}",
            None if name in unpatchable else f"oversmooth.mitigations.{module}",
        )
        for name, module in MODULE_OF.items()
    }


def test_the_package_exports_no_method_and_listing_methods_imports_no_torch():
    out = fresh_python(
        "import sys; import oversmooth.mitigations as package; "
        "from oversmooth.mitigations.registry import METHODS, knob_owners, patchable; "
        "knob_owners('train'); patchable(); "
        "print(repr((sorted(n for n in vars(package) if not n.startswith('__')), list(METHODS), "
        "'torch' in sys.modules)))"
    )
    exported, names, torch_imported = eval(out)
    assert exported == ["knobs", "registry"]  # the submodules just imported, nothing else
    assert names == list(MODULE_OF) and not torch_imported


def test_a_patch_is_declared_exactly_where_no_reason_against_one_is_given():
    for name, m in METHODS.items():
        assert bool(m.patch_at) != bool(m.unpatchable), name
        assert bool(m.layer_at) != bool(m.untrainable), name
        assert (set(m.models) == {"vit", "lm"}) != bool(m.models_why), name


def test_training_refuses_the_interventions_and_registers_in_the_causal_lm():
    from oversmooth.layers import MitigationConfig
    from oversmooth.models import CausalLMConfig

    with pytest.raises(UsageError, match="sink_removal does not train: it is an intervention on a pretrained"):
        MitigationConfig.parse("neutreno+sink_removal")
    with pytest.raises(UsageError, match="massive_clip does not train"):
        MitigationConfig.parse("massive_clip")
    with pytest.raises(UsageError, match="registers trains in our ViT only, not the causal LM: "):
        CausalLMConfig.preset("lm-cpu", mitigation="registers")
    with pytest.raises(UsageError, match="registers must be a whole number, got 1.5"):
        make_knobs("registers", {"registers": 1.5})


def test_readme_methods_table_lists_exactly_the_registry_and_which_patch():
    readme = (Path(__file__).parent.parent / "README.md").read_text().split("## Methods")[1].split("\n## ")[0]
    rows = {
        name: (train, patch)
        for name, train, patch in re.findall(r"^\| `(\w+)` \|.*\| (yes|no|ViT) \| (yes|no) \|$", readme, flags=re.M)
    }
    assert set(rows) == set(METHODS)
    for name, m in METHODS.items():
        trains = "no" if m.untrainable else "yes" if len(m.models) == 2 else "ViT"
        assert rows[name] == (trains, "yes" if m.patch_at else "no"), name
