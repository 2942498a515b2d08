"""Where a result comes from, written into every result file (``report.md`` and the JSON of
``analyze``, ``train``, ``adapt``, ``theory`` and ``report``): the package version and the git
commit it runs from (and whether that checkout has changes), the Python, torch and transformers
versions, the device, the command line, the seeds, and what the result was computed from.

``Provenance.gather(...)`` collects it; ``to_json()`` is the ``"provenance"`` table of a JSON
file, ``to_markdown()`` the ``## Provenance`` section that ends a report (``PROVENANCE_HEADING``:
whatever compares reports across machines cuts them there). Paths in it are relative to the
output folder (``shown_path``) and models are named by their identity (package and version, hub
name), never by a machine's absolute path. Versions are read from the installed distributions'
metadata: nothing heavy is imported. Files written before provenance was recorded have none, and
every reader takes them as they are.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

PROVENANCE_HEADING = "## Provenance"
#: the distributions whose versions every result records
LIBRARIES = ("torch", "transformers")


def distribution_version(name: str) -> str | None:
    """The installed version of distribution ``name``, None if it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def checkout() -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the git checkout this package runs from: the commit checked out and
    whether tracked files differ from it; ``(None, None)`` for an installed package (its files
    tracked by no repository) or where git is missing."""
    here = Path(__file__).resolve().parents[1]  # the package's folder

    def git(*words: str) -> str | None:
        try:
            done = subprocess.run(["git", *words], cwd=here, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    if git("ls-files", "--error-unmatch", "__init__.py") is None:  # not tracked: not a checkout of ours
        return None, None
    commit = git("rev-parse", "HEAD")
    changes = git("status", "--porcelain", "--untracked-files=no")
    return commit, None if commit is None or changes is None else bool(changes)


def version_line() -> str:
    """``oversmooth --version``: the version, the checkout's commit, Python and the libraries.

    >>> version_line().startswith("oversmooth ")
    True
    """
    from oversmooth import __version__

    commit, dirty = checkout()
    where = f" (git {commit[:12]}{', with uncommitted changes' if dirty else ''})" if commit else ""
    libraries = ", ".join(f"{name} {distribution_version(name) or 'not installed'}" for name in LIBRARIES)
    return f"oversmooth {__version__}{where}\nPython {platform.python_version()}, {libraries}"


def device_name(device: object) -> str:
    """``cpu``, or a GPU with its name: ``cuda:0 (NVIDIA H200)``."""
    text = str(device)
    if not text.startswith("cuda"):
        return text
    import torch

    index = torch.device(text).index
    return f"{text} ({torch.cuda.get_device_name(index)})"


def shown_path(path: str | os.PathLike, out: str | os.PathLike) -> str:
    """``path`` as a report in folder ``out`` shows it: relative to ``out``.

    >>> shown_path("/data/runs/a/model", "/data/runs/a-analysis")
    '../a/model'
    """
    return os.path.relpath(Path(path).absolute(), Path(out).absolute())


def digest(parts: Iterable[object]) -> str:
    """sha256 of ``parts`` in order: text (UTF-8), bytes, or tensors (their dtype, shape and
    bytes), so that equal data gives the same digest on every machine."""
    sha = hashlib.sha256()
    for part in parts:
        if isinstance(part, str):
            sha.update(part.encode())
        elif isinstance(part, (bytes, bytearray, memoryview)):
            sha.update(part)
        else:  # a torch tensor
            import torch

            flat = part.detach().cpu().contiguous().reshape(-1)
            sha.update(f"{flat.dtype}{tuple(part.shape)}".encode())
            sha.update(flat.view(torch.uint8).numpy().tobytes())
    return sha.hexdigest()


@dataclass(frozen=True)
class Provenance:
    """Where one result comes from. ``data``: what it was computed from, by name (a data set, a
    file relative to the output folder, a model's identity) with its ``sha256`` where read;
    ``seeds``: every seed the result depends on, by what it seeds."""

    command: str
    device: str | None
    seeds: dict[str, object]
    data: dict[str, str]
    oversmooth: str
    commit: str | None
    dirty: bool | None
    python: str
    libraries: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def gather(
        cls,
        command: str,
        device: object = None,
        seeds: dict[str, object] | None = None,
        data: dict[str, str] | None = None,
    ) -> Provenance:
        """This process's provenance for a result of ``command`` computed on ``device`` (None:
        none, e.g. a report on files) with ``seeds`` from ``data``."""
        from oversmooth import __version__

        commit, dirty = checkout()
        return cls(
            command=command,
            device=None if device is None else device_name(device),
            seeds=dict(seeds or {}),
            data=dict(data or {}),
            oversmooth=__version__,
            commit=commit,
            dirty=dirty,
            python=platform.python_version(),
            libraries={name: distribution_version(name) for name in LIBRARIES},
        )

    def to_json(self) -> dict:
        """The ``"provenance"`` table of a result's JSON."""
        return {
            "oversmooth": self.oversmooth,
            "commit": self.commit,
            "dirty": self.dirty,
            "python": self.python,
            **self.libraries,
            "device": self.device,
            "command": self.command,
            "seeds": self.seeds,
            "data": self.data,
        }

    @classmethod
    def from_json(cls, data: dict) -> Provenance:
        """The provenance ``to_json`` wrote (a field it lacks: None, or empty)."""
        return cls(
            command=data.get("command", ""),
            device=data.get("device"),
            seeds=data.get("seeds") or {},
            data=data.get("data") or {},
            oversmooth=data.get("oversmooth", "?"),
            commit=data.get("commit"),
            dirty=data.get("dirty"),
            python=data.get("python", "?"),
            libraries={name: data.get(name) for name in LIBRARIES},
        )

    def to_markdown(self) -> str:
        """The ``## Provenance`` section that ends a report (one list item per fact)."""
        code = f"git {self.commit}" + (" with uncommitted changes" if self.dirty else "") if self.commit else "no git"
        libraries = ", ".join(f"{name} {version or 'not installed'}" for name, version in self.libraries.items())
        lines = [
            PROVENANCE_HEADING,
            "",
            f"- oversmooth {self.oversmooth} ({code}); Python {self.python}, {libraries}",
            *([f"- device: {self.device}"] if self.device else []),
            f"- command: `{self.command}`",
            f"- seeds: {', '.join(f'{k} {v}' for k, v in self.seeds.items()) or 'none'}",
            *(f"- {name}: {value}" for name, value in self.data.items()),
        ]
        return "\n".join(lines) + "\n"
