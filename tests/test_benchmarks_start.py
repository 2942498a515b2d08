"""Every benchmark script still starts (``--help`` imports what it measures): a rename in the package
cannot leave one broken unnoticed, as bench_overhead.py was once by ``layers.METHODS``."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "benchmarks").glob("bench_*.py")))
def test_benchmark_starts(script):
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--help"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage" in done.stdout.lower()
