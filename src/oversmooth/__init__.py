"""oversmooth: measure, diagnose and mitigate oversmoothing in deep Transformers."""

__version__ = "0.1.0"

from oversmooth.utils.lazy import lazy_exports

#: the notebook API (``analyze/notebook.py``): torch and transformers are imported on first use only
_API = {
    "load": "analyze.notebook",
    "analyze": "analyze.notebook",
    "plot_layers": "analyze.plots",
    "measure": "metrics",
    "patch": "hf.patch",
    "unpatch": "hf.patch",
    "patched": "hf.patch",
    "watch": "analyze.watch",
}
__all__ = list(_API)
__getattr__ = lazy_exports(__name__, _API)


def __dir__() -> list[str]:
    """Tab completion shows the API, not only what was imported so far."""
    return sorted({*globals(), *_API})
