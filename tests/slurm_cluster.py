"""A real one-node Slurm cluster on localhost for the tests: munged, slurmctld and slurmd started
in the foreground as our children, with a generated config, key and socket in a temp folder.

Needs Debian's ``slurmctld``, ``slurmd``, ``slurm-client`` and ``munge`` (``make setup`` installs
them as root) and root (slurmd runs jobs as their user). ``missing()`` says why not, or "".
``SlurmCluster.stop()`` stops the daemons by PID and reaps them, whatever the tests did.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol")


def missing() -> str:
    """Why no cluster can start here ("" if it can)."""
    absent = [name for name in DAEMONS if shutil.which(name) is None and not Path("/usr/sbin", name).is_file()]
    if absent:
        return f"Slurm/munge not installed ({', '.join(absent)}); as root on Debian, make setup installs them"
    if os.geteuid() != 0:
        return "a local Slurm cluster needs root (slurmd runs jobs as their user)"
    return ""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _tool(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def _node_line() -> str:
    """The node's real CPUs and memory, as ``slurmd -C`` reads them."""
    found = subprocess.run([_tool("slurmd"), "-C"], capture_output=True, text=True, check=True).stdout
    return next(line for line in found.splitlines() if line.startswith("NodeName="))


@dataclass
class SlurmCluster:
    """The daemons of one cluster under ``root``; ``env`` is what a client needs (``SLURM_CONF``)."""

    root: Path
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def write_config(self) -> None:
        socket_path = self.root / "munge" / "munge.socket"
        node = _node_line()
        name = node.split()[0].split("=", 1)[1]
        spool = self.root / "spool"
        for folder in (spool / "ctld", spool / "d", self.root / "munge"):
            folder.mkdir(parents=True, exist_ok=True)
        self.conf.write_text(
            "\n".join(
                [
                    "ClusterName=oversmooth-test",
                    f"SlurmctldHost={name}(127.0.0.1)",
                    f"SlurmctldPort={_free_port()}",
                    f"SlurmdPort={_free_port()}",
                    "SlurmUser=root",
                    "SlurmdUser=root",
                    "AuthType=auth/munge",
                    "CredType=cred/munge",
                    f"AuthInfo=socket={socket_path}",
                    f"StateSaveLocation={spool / 'ctld'}",
                    f"SlurmdSpoolDir={spool / 'd'}",
                    f"SlurmctldPidFile={self.root / 'slurmctld.pid'}",
                    f"SlurmdPidFile={self.root / 'slurmd.pid'}",
                    f"SlurmctldLogFile={self.root / 'slurmctld.log'}",
                    f"SlurmdLogFile={self.root / 'slurmd.log'}",
                    "ProctrackType=proctrack/linuxproc",
                    "TaskPlugin=task/none",
                    "SelectType=select/cons_tres",
                    "SelectTypeParameters=CR_CPU",
                    "JobRequeue=1",
                    "ReturnToService=2",
                    "KillWait=5",
                    "SchedulerType=sched/builtin",
                    "MpiDefault=none",
                    "JobAcctGatherType=jobacct_gather/none",
                    "AccountingStorageType=accounting_storage/none",
                    "SlurmctldTimeout=30",
                    "SlurmdTimeout=30",
                    "InactiveLimit=0",
                    "MinJobAge=300",
                    "MaxArraySize=1000",
                    "SlurmctldDebug=info",
                    "SlurmdDebug=info",
                    f"{node} NodeAddr=127.0.0.1 State=UNKNOWN",
                    f"PartitionName=debug Nodes={name} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4",
                    "",
                ]
            )
        )

    def _start(self, command: list[str], log: str) -> None:
        with open(self.root / log, "ab") as handle:
            self.processes.append(
                subprocess.Popen(
                    command,
                    stdout=handle,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env={**os.environ, **self.env},
                )
            )

    def start(self) -> None:
        """Write the config and a key, start the daemons and wait until the node takes jobs."""
        self.write_config()
        munge = self.root / "munge"
        key = munge / "munge.key"
        subprocess.run([_tool("mungekey"), "--create", f"--keyfile={key}"], check=True, capture_output=True)
        key.chmod(0o600)
        munge.chmod(0o700)
        self._start(
            [
                _tool("munged"),
                "--foreground",
                "--force",
                f"--socket={munge / 'munge.socket'}",
                f"--key-file={key}",
                f"--pid-file={munge / 'munged.pid'}",
                f"--log-file={munge / 'munged.log'}",
                f"--seed-file={munge / 'munged.seed'}",
            ],
            "munged.out",
        )
        self._wait(lambda: (munge / "munge.socket").exists(), "munged")
        self._start([_tool("slurmctld"), "-D", "-i", "-f", str(self.conf)], "slurmctld.out")
        self._start([_tool("slurmd"), "-D", "-f", str(self.conf)], "slurmd.out")
        self._wait(self._node_ready, "the node to come up")

    def _node_ready(self) -> bool:
        found = subprocess.run(
            ["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, env={**os.environ, **self.env}
        )
        return found.returncode == 0 and found.stdout.strip() in ("idle", "mix", "alloc")

    def _wait(self, ready, what: str, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while not ready():
            dead = [p.args[0] for p in self.processes if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                logs = "\n".join(
                    f"--- {p.name}\n{p.read_text()[-1500:]}" for p in sorted(self.root.glob("*.log*")) if p.is_file()
                )
                why = f"exited: {', '.join(dead)}" if dead else "timed out"
                raise RuntimeError(f"waiting for {what}: {why}\n{logs}")
            time.sleep(0.2)

    def stop(self) -> None:
        """Cancel every job and let the queue drain (so no job step outlives slurmd), then SIGTERM
        each daemon (slurmd first), SIGKILL after 20 s, and reap it."""
        env = {**os.environ, **self.env}
        if self.processes and all(p.poll() is None for p in self.processes):
            subprocess.run(["scancel", "--full", "--user", "root"], env=env, capture_output=True)
            try:
                self._wait(
                    lambda: (
                        not subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True).stdout.strip()
                    ),
                    "the queue to drain",
                    60,
                )
            except RuntimeError:
                pass  # stop the daemons all the same
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()
