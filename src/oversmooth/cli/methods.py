"""``oversmooth methods [NAME ...]``: every mitigation of the registry, what it computes, where it
acts, its knobs with their defaults and flags, and whether it trains (``train --method``) and
patches (``analyze`` / ``adapt`` ``--method``); all read from ``oversmooth.mitigations.registry``."""

from __future__ import annotations

import argparse

DESCRIPTION = (
    "List the mitigations: formula and paper, where each acts, its knobs (flag, default, where it "
    "applies), its zero setting (the baseline exactly), the norm placements and models it trains in "
    "(and if it does not train, why), and whether it patches into a pretrained model (and if not, "
    "why). Read from the registry."
)


def register(subparsers) -> None:
    parser = subparsers.add_parser("methods", help="list the mitigations and their knobs", description=DESCRIPTION)
    parser.add_argument("names", nargs="*", metavar="NAME", help="only these methods (default: all)")
    parser.set_defaults(run=run)


def describe(name: str) -> str:
    """The lines of one method's entry."""
    from oversmooth.mitigations.registry import MODELS, method

    m = method(name)
    lines = [f"{m.name}: {m.formula}", f"  paper: {m.paper}", f"  acts on: {m.site}"]
    for f in m.fields():
        scope = " and ".join(f.metadata["scope"])
        default = f.default if f.metadata.get("causal") is None else f"{f.default} ({f.metadata['causal']} causal LM)"
        lines.append(f"  --{m.flag(f.name).replace('_', '-')}  default {default}; {scope}: {f.metadata['help']}")
    if m.zero:
        lines.append("  zero setting: " + ", ".join(f"{k}={v}" for k, v in m.zero.items()))
    if m.untrainable:
        trains = f"no training: {m.untrainable}"
    else:
        models = (
            "" if not m.models_why else f"; our {' and '.join(MODELS[kind] for kind in m.models)} only: {m.models_why}"
        )
        trains = f"train (norms: {', '.join(m.norms)}{'; ' + m.norms_why if m.norms_why else ''}{models})"
    patches = (
        "patch (analyze, adapt)" + (": the model as it is at its defaults" if m.patch_is_identity else "")
        if m.patch_at
        else f"no patch: {m.unpatchable}"
    )
    lines.append(f"  {trains}; {patches}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from oversmooth.mitigations.registry import METHODS, method

    names = args.names or list(METHODS)
    for name in names:
        method(name)  # an unknown name: one line naming the choices, before any output
    print("\n\n".join(describe(name) for name in names))
    return 0
