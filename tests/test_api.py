"""The package's top-level API: what tab completion shows, importable without torch until used,
and ``oversmooth.analyze`` callable even once the ``oversmooth.analyze`` package is imported."""

import subprocess
import sys

API = {"load", "analyze", "plot_layers", "measure", "patch", "unpatch", "patched", "watch"}


def test_dir_shows_the_api_without_importing_torch():
    code = "import sys, oversmooth; print(sorted(set(dir(oversmooth)) & %r), 'torch' in sys.modules)" % API
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"{sorted(API)} False"


def test_analyze_is_the_function_whatever_was_imported():
    import oversmooth
    import oversmooth.analyze.settings  # noqa: F401 - makes oversmooth.analyze the package

    assert callable(oversmooth.analyze) and callable(oversmooth.load) and callable(oversmooth.plot_layers)
    from oversmooth.metrics import measure

    assert oversmooth.measure is measure
