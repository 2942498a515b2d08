"""``oversmooth methods`` lists every method of the registry with its knobs (flags and defaults),
where it trains and whether it patches; an unknown name is one line, exit 2."""

from oversmooth.cli import main
from oversmooth.mitigations.registry import METHODS, knob_owners


def test_every_method_and_knob_is_listed(capsys):
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    entries = {block.split(":")[0]: block for block in out.split("\n\n")}
    assert list(entries) == list(METHODS)
    flags = {**knob_owners("train"), **knob_owners("patch")}
    for flag, (name, _) in flags.items():
        assert f"--{flag.replace('_', '-')}  default" in entries[name], (flag, name)
    assert "0.6 (0.4 causal LM)" in entries["neutreno"]  # NeuTRENO's LM default, the paper's
    for name, m in METHODS.items():
        assert ("no patch: " + m.unpatchable if not m.patch_at else "patch (analyze, adapt)") in entries[name]
        assert ("no training: " + m.untrainable if m.untrainable else "train (norms: ") in entries[name]
    assert "our ViT only: registers are tokens" in entries["registers"]


def test_named_methods_only_and_a_wrong_name_is_one_line(capsys):
    assert main(["methods", "contranorm"]) == 0
    assert capsys.readouterr().out.startswith("contranorm: ")
    assert main(["methods", "contranrom"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown mitigation 'contranrom'" in err
