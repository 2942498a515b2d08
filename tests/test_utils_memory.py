"""``utils.memory.PeakMemory`` on this (Linux) CPU: the peak of a stretch of work, read against the
size of a tensor it allocated and freed; a watch started afterwards does not see it."""

import sys

import pytest
import torch

from oversmooth.utils.memory import PeakMemory

MIB = 256


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self")
def test_the_peak_of_a_stretch_is_what_it_allocated_and_a_later_one_starts_afresh():
    watch = PeakMemory("cpu")
    block = torch.ones(MIB * 2**20 // 4)  # float32: MIB MiB, every page written
    del block
    seen = watch.read()
    assert seen["measure"] == "resident memory of the process (RSS)"
    assert MIB * 0.95 <= seen["peak_mib"] - seen["start_mib"] <= MIB + 64
    later = PeakMemory("cpu").read()  # after the block was freed: its peak is not this stretch's
    assert later["peak_mib"] - later["start_mib"] < 32
    assert later["start_mib"] < seen["peak_mib"] - MIB * 0.9
