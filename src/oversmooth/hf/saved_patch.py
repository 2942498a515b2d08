"""A model saved with a patch in it: the patch is recorded in ``config.json`` so that loading the
folder through ``oversmooth.hf.load.load`` re-applies it, and loading it elsewhere is refused.

The record: ``config["oversmooth_patch"] = {"method", "knobs", "model_type"}`` and ``model_type``
replaced by ``oversmooth_patched``. Plain ``transformers`` (``AutoModel`` / ``AutoConfig``) then
refuses the folder, naming ``oversmooth_patched``, instead of loading weights that were trained
with a patch into a model without it. (A family class called directly, ``BertModel.from_pretrained``,
reads the config anyway and only warns about the model type: use the Auto classes or our loader.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RECORD = "oversmooth_patch"
PATCHED_TYPE = "oversmooth_patched"


def record_patch(folder: str | Path, method: str, knobs: dict[str, Any]) -> None:
    """Mark the checkpoint in ``folder`` (``save_pretrained`` output) as carrying ``method``."""
    path = Path(folder) / "config.json"
    config = json.loads(path.read_text())
    config[RECORD] = {"method": method, "knobs": dict(knobs), "model_type": config["model_type"]}
    config["model_type"] = PATCHED_TYPE
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def split_record(config: dict) -> tuple[dict, dict | None]:
    """``(config as transformers wrote it, the patch record or None)``."""
    record = config.get(RECORD)
    if config.get("model_type") != PATCHED_TYPE or not isinstance(record, dict):
        return config, None
    plain = {k: v for k, v in config.items() if k != RECORD}
    plain["model_type"] = record["model_type"]
    return plain, record
