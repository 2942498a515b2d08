"""``--threads N`` on every command that computes, one flag (``cli._arguments.add_threads_flag``)
or one ``RunSpec`` / ``AdaptConfig`` field, checked alike."""

import pytest
import torch

from oversmooth.cli import build_parser, main

#: the commands that run torch; ``metrics``, ``methods`` and ``report`` only list or read
COMPUTING = ("adapt", "analyze", "claims", "study", "theory", "train")


def subcommands():
    return next(a for a in build_parser()._actions if a.dest == "command").choices


@pytest.mark.parametrize("command", COMPUTING)
def test_every_computing_command_takes_threads(command):
    assert "--threads" in {o for a in subcommands()[command]._actions for o in a.option_strings}


@pytest.mark.parametrize("command", ["analyze", "theory", "claims"])
def test_threads_below_one_is_refused_in_one_line(command, capsys):
    with pytest.raises(SystemExit) as done:
        main([command, "--threads", "0"])
    assert done.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "threads >= 1, got '0'" in err, err


def test_analyze_runs_torch_on_the_threads_asked_for(tmp_path, capsys):
    before = torch.get_num_threads()
    try:
        # a missing model is refused after the threads are set: torch itself says how many it has
        assert main(["analyze", str(tmp_path / "missing"), "--threads", "2", "--out", str(tmp_path / "o")]) == 2
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert "no such file or folder" in capsys.readouterr().err
