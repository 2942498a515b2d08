"""What ``oversmooth claims DIR ...`` reads: study folders (or their archives), the archive of
claim 8's adaptations (``results/fmnist-p7-adapt``), claim 3's cost rounds (``results/claim3``),
the archived probes (``results/probes``), the third protocol's records (``results/third-protocol``),
the fourth step's adaptations (``results/fourth-step``) and the sink claims' measurements of pretrained
models (``results/sinks``), told apart by what they hold."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from oversmooth.claims.adaptations import NAME as ADAPTATIONS
from oversmooth.claims.adaptations import read_adaptations
from oversmooth.claims.depth_fixes import STUDY as DEPTH_FIXES
from oversmooth.claims.files import PROBES_FILE, ROUNDS_FILE
from oversmooth.claims.fourth_step_budget import STUDIES as BUDGETED_STUDIES
from oversmooth.claims.fourth_step_budget import read_decision
from oversmooth.claims.protocol import DEEP_PILOTS
from oversmooth.claims.regime_pilot import PILOTS as REGIME_PILOTS
from oversmooth.claims.sinks_pretrained import SUBFOLDER as SINKS
from oversmooth.claims.sinks_trained import PILOT as SINKS_PILOT
from oversmooth.claims.smollm2_fair import FOLDER as FOURTH_STEP
from oversmooth.claims.smollm2_fair import read_fair_adaptations
from oversmooth.claims.third_protocol import NAME as THIRD_PROTOCOL
from oversmooth.claims.third_protocol import read_third_protocol
from oversmooth.errors import UsageError
from oversmooth.study.results import CellResult, read_studies

if TYPE_CHECKING:
    from oversmooth.claims.probes import Probes

#: the third protocol's studies the claims report reads (docs/registrations/fourth-step.md): claim 4's
#: deep pilots and third family, the regime pilot (the re-tests' studies are read by
#: scripts/retest_pilots.py, which records them)
THIRD_PROTOCOL_STUDIES = (*DEEP_PILOTS, DEPTH_FIXES, *REGIME_PILOTS)
#: the fourth step's studies the claims report reads (docs/registrations/fourth-step.md)
FOURTH_STEP_STUDIES = BUDGETED_STUDIES
#: the sink claims' studies (docs/registrations/sinks.md)
SINK_STUDIES = (SINKS_PILOT.name,)
#: what the claims report reads under results/: the second and third protocols' archives (the first
#: protocol's stay there as they ran, read by nothing but their own sections of old reports)
PROTOCOL_ARCHIVES = (
    "fmnist-p7",
    "fmnist-p7-long",
    "fmnist-p7-spectral",
    ADAPTATIONS,
    "depth-p7-pilot",
    "depth-w32-pilot",
    "depth-w32-long",
    "depth-w32",
    *THIRD_PROTOCOL_STUDIES,
    "austen-p2",
    "austen-p2-long",
    "austen-p3",
    "austen-p3-long",
    "claim3",
    "probes",
    THIRD_PROTOCOL,
    *FOURTH_STEP_STUDIES,
    FOURTH_STEP,
    SINKS,
    *SINK_STUDIES,
)


@dataclass
class FolderContents:
    """What the folders given to ``oversmooth claims`` hold, by kind: everything its report decides
    on (a claim's pairs drawn from them are a ``claims.gathering.Evidence``)."""

    cells: list[CellResult] = field(default_factory=list)
    commands: dict[str, str] = field(default_factory=dict)
    adapted: list[dict] = field(default_factory=list)
    benchmark: dict | None = None
    probes: Probes | None = None
    third_protocol: list[dict] = field(default_factory=list)
    fair_adapted: dict[int, dict] = field(default_factory=dict)  # claim 8 on SmolLM2, fairly: seed -> adapt.json
    budget: dict | None = None  # the fourth step's decision on 2b's remaining pairs (None: not taken)
    sinks_root: Path | None = None  # the folder whose sinks/ holds S1 and S2's measurements


def read_benchmark(folder: Path) -> dict:
    """Claim 3's ``rounds.json``: ``{"rounds": [{"neutreno": s, "softmax": s}, ...], ...}``."""
    path = folder / ROUNDS_FILE
    try:
        data = json.loads(path.read_text())
        rounds = data["rounds"]
        if not rounds or not all(r["neutreno"] > 0 and r["softmax"] > 0 for r in rounds):
            raise ValueError("no rounds, or a time that is not positive")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UsageError(
            f"{path} is damaged ({error}); rerun python benchmarks/bench_claim3.py --out {folder}"
        ) from None
    return data


def protocol_archives(root: str | Path = "results") -> list[Path]:
    """The ``PROTOCOL_ARCHIVES`` under ``root`` that hold a result file, in that order: a folder with
    none (empty, which git does not keep, or holding only hidden files and ``.tmp`` files being
    written) is left out, so a clean clone's report is the same."""
    folders = [Path(root) / name for name in PROTOCOL_ARCHIVES]
    return [folder for folder in folders if folder.is_dir() and any(map(_result_file, folder.rglob("*")))]


def _result_file(path: Path) -> bool:
    return path.is_file() and not path.name.startswith(".") and path.suffix != ".tmp"


def read_folders(folders: list[str | Path]) -> FolderContents:
    """Read each folder by its kind, the study folders together (``read_studies``: a cell read
    twice is refused); a folder of no known kind is a UsageError naming it."""
    found, studies = FolderContents(), []
    for folder in map(Path, folders):
        if (folder / ROUNDS_FILE).is_file():
            found.benchmark = read_benchmark(folder)
        elif (folder / PROBES_FILE).is_file():
            from oversmooth.claims.probes import read_probes  # torch: only where probes are archived

            found.probes = read_probes(folder)
        elif folder.name == ADAPTATIONS:
            found.adapted += read_adaptations(folder.parent)
        elif folder.name == THIRD_PROTOCOL:
            found.third_protocol += read_third_protocol(folder)
        elif folder.name == FOURTH_STEP:
            found.fair_adapted |= read_fair_adaptations(folder)
            found.budget = read_decision(folder)
        elif folder.name == SINKS:
            found.sinks_root = folder.parent
        else:
            studies.append(folder)
    found.cells, found.commands = read_studies(studies)
    return found
