"""oversmooth: measure, diagnose and mitigate oversmoothing in deep Transformers."""

__version__ = "0.1.0"
