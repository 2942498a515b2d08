"""Adapt a patched model: patch a mitigation in, fine-tune briefly beside an unpatched control
arm, report how much came back (``docs/adapt.md``).

``adapt(AdaptConfig(model=..., method="neutreno", knobs=({"lam": 0.6},), steps=200, out=...))``
returns an ``AdaptResult`` and writes ``adapt.json``, ``adapt.csv``, ``adapt.png``, ``report.md``
and one adapted model per arm. Stands above ``train`` (its loop, checkpoints, resume, progress)
and ``hf`` (loading, patching, capture); neither imports this package. ``adapt`` (and torch) is
imported on first use: the config alone (``oversmooth adapt --help``) needs no torch.
"""

from oversmooth.adapt.config import AdaptConfig
from oversmooth.adapt.result import AdaptResult, ArmResult
from oversmooth.utils.lazy import lazy_exports

__all__ = ["AdaptConfig", "AdaptResult", "ArmResult", "adapt", "adapt_arms"]


__getattr__ = lazy_exports(__name__, {"adapt": "run", "adapt_arms": "run"})
