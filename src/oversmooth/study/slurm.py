"""What the study asks Slurm itself: is a controller reachable, which partitions exist, which jobs
are queued. Only ``sinfo`` and ``squeue`` (answered by slurmctld): no accounting (``sacct``)
needed, so job states come from the cells' own files, with the queue for pending jobs."""

from __future__ import annotations

import shutil
import subprocess

from oversmooth.errors import UsageError

_FIX = "run on a cluster's login node (or set SLURM_CONF), or use --executor local"


def _ask(command: list[str]) -> str:
    if shutil.which(command[0]) is None:
        raise UsageError(f"--executor slurm: no Slurm here ({command[0]} not found); {_FIX}")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise UsageError(
            f"--executor slurm: the Slurm controller did not answer {command[0]} in 60 s; {_FIX}"
        ) from None
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
        raise UsageError(f"--executor slurm: no Slurm controller reachable ({command[0]}: {reason}); {_FIX}")
    return done.stdout


def partitions() -> list[str]:
    """The cluster's partition names (UsageError when no controller answers)."""
    return sorted({line.strip() for line in _ask(["sinfo", "-h", "-o", "%R"]).splitlines() if line.strip()})


def check_partition(partition: str | None) -> None:
    """UsageError unless Slurm answers and has ``partition`` (None: the cluster's default)."""
    names = partitions()
    if partition is not None and partition not in names:
        raise UsageError(f"Slurm partition {partition!r} does not exist; choose from {', '.join(names)}")


def queued(job_ids: set[str]) -> dict[str, str]:
    """The queue state (PENDING, RUNNING, ...) of those of ``job_ids`` (``123`` or ``123_4``) that
    Slurm still lists; {} where no Slurm answers."""
    if not job_ids or shutil.which("squeue") is None:
        return {}
    done = subprocess.run(["squeue", "-h", "-r", "-o", "%i|%T"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return {}
    states = dict(line.split("|", 1) for line in done.stdout.split() if "|" in line)
    return {job: states[job] for job in job_ids if job in states}
