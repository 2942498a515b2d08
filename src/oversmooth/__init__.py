"""oversmooth: measure, diagnose and mitigate oversmoothing in deep Transformers."""

__version__ = "0.1.0"

from oversmooth.lazy import lazy_exports

#: ``oversmooth.patch`` / ``oversmooth.unpatch`` / ``oversmooth.watch`` import torch and
#: transformers on first use only
__getattr__ = lazy_exports(__name__, {"patch": "hf.patch", "unpatch": "hf.patch", "watch": "analyze.watch"})
