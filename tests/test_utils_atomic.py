"""Atomic writes: all or nothing, with the ordinary file mode."""

import os
import stat

import pytest

from oversmooth.utils.atomic import atomic_directory, atomic_write


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_write(target) as handle:
        handle.write("half")
        raise RuntimeError("killed")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["r.json"]


def test_files_get_the_umask_mode_not_0600(tmp_path):
    old = os.umask(0o022)
    try:
        with atomic_write(tmp_path / "a.txt") as handle:
            handle.write("x")
        with atomic_directory(tmp_path / "out") as staging:
            (staging / "b.txt").write_text("y")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "out" / "b.txt").stat().st_mode) == 0o644


def test_failed_directory_leaves_the_target_untouched(tmp_path):
    with pytest.raises(RuntimeError), atomic_directory(tmp_path / "out") as staging:
        (staging / "part.csv").write_text("partial")
        raise RuntimeError("bad input")
    assert os.listdir(tmp_path) == []
