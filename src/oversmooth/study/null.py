"""The null of a trained cell's last-layer cos_sim (docs/registrations/fourth-step.md): the same
architecture at random initialisation, on the validation probe its training records.
``scripts/random_init_null.py`` writes it, per arm of a study preset, to
``results/<study>/null.json``; ``read_null`` reads it back, by arm, for the cells archived beside
it.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path

from oversmooth.study.config import StudyConfig
from oversmooth.study.files import NULL_FILE
from oversmooth.utils.atomic import atomic_write
from oversmooth.utils.json_files import NUMBER, check_table, read_table

#: an arm of a study: ``(task, norm, method label, depth)``
ArmKey = tuple[str, str, str, int]
ARM_FIELDS = {
    "task": str,
    "norm": str,
    "label": str,
    "depth": int,
    "cos_sim": list,
    "mean": NUMBER,
    "sd": (*NUMBER, type(None)),
    "inits": int,
    "probe_examples": int,
}


def measure_arm_nulls(preset: StudyConfig, inits: int) -> list[dict]:
    """Per arm of ``preset``: the model of its first cell built under seeds ``0 .. inits - 1`` (our
    init, as ``oversmooth train`` draws it from the seed) and measured on the probe a trained cell
    records (its first ``probe_size`` validation examples) as training measures it
    (``train.evaluation.layer_metrics``): the last layer's cos_sim per init, their mean and sample
    sd (None for one init)."""
    from oversmooth.train.evaluation import layer_metrics, validation_probe
    from oversmooth.train.run import build_model, data_options
    from oversmooth.train.task_factory import make_task

    arms: dict[ArmKey, dict] = {}
    for cell in preset.cells():
        key = (cell.task, cell.norm, cell.variant.label, cell.depth)
        if key in arms:
            continue
        spec = cell.spec()
        task, _ = make_task(spec.task, spec.model, data_options(spec))
        probe = validation_probe(task, spec.probe_size)
        values = [
            layer_metrics(build_model(dataclasses.replace(spec, seed=seed), task), probe)[-1]["cos_sim"]
            for seed in range(inits)
        ]
        arms[key] = {
            **dict(zip(("task", "norm", "label", "depth"), key)),
            "method": cell.variant.method,
            "model": cell.model,
            "cos_sim": values,
            "mean": statistics.fmean(values),
            "sd": statistics.stdev(values) if inits > 1 else None,
            "inits": inits,
            "probe_examples": len(probe),
        }
    return list(arms.values())


def write_null(preset: StudyConfig, root: str | Path, inits: int, command: str) -> Path:
    """``measure_arm_nulls`` of ``preset`` into ``root/<preset>/null.json`` (atomically), with ``command``."""
    arms = measure_arm_nulls(preset, inits)
    path = Path(root) / preset.name / NULL_FILE
    with atomic_write(path) as handle:
        json.dump({"study": preset.name, "command": command, "arms": arms}, handle, indent=1)
    return path


def read_null(folder: str | Path) -> dict[ArmKey, dict]:
    """The arms of ``folder/null.json`` by ``(task, norm, label, depth)``; {} where it has none. A
    damaged file, or an arm without a field the report reads, is a UsageError naming it."""
    path = Path(folder) / NULL_FILE
    if not path.is_file():
        return {}
    fix = "delete it, or write it again with scripts/random_init_null.py"
    arms = read_table(path, {"arms": list}, fix)["arms"]
    found = [check_table(arm, f"{path} (an arm)", ARM_FIELDS, fix) for arm in arms]
    return {(arm["task"], arm["norm"], arm["label"], arm["depth"]): arm for arm in found}
