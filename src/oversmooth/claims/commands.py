"""How to reproduce a claim's evidence: the command its row prints (claims 8 and 2c's is
``claims.adaptations.COMMAND``)."""

from __future__ import annotations

import shlex

PROBES_COMMAND = "python -m oversmooth.claims.probes --out results/probes (about a minute)"
BENCH_COMMAND = "python benchmarks/bench_claim3.py --out results/claim3"
#: `oversmooth study` flags that keep part of a study's grid (``study_command`` drops them)
NARROWING = ("--methods", "--seeds", "--depths")


def study_command(name: str, recorded: str | None) -> str:
    """How to run study ``name`` whole: the ``recorded`` command that last ran it, less the flags that
    keep only some of its methods, seeds or depths (a narrowed run cannot make a claim's pairs).

    >>> study_command("fmnist-p7", "oversmooth study fmnist-p7 --out runs/x --seeds 6,7 --methods=softmax")
    'oversmooth study fmnist-p7 --out runs/x'
    >>> study_command("depth-w32", "oversmooth study depth-w32 --out runs/y --depths 48 --jobs 2")
    'oversmooth study depth-w32 --out runs/y --jobs 2'
    """
    if recorded is None:
        return f"oversmooth study {name} --out runs/studies/{name} --results results"
    words = shlex.split(recorded)
    drop = {i for i, word in enumerate(words) if word.split("=")[0] in NARROWING}
    drop |= {i + 1 for i in drop if words[i] in NARROWING}  # the flag's value, as a word of its own
    return shlex.join(word for i, word in enumerate(words) if i not in drop)
