"""Peak memory and time of `analyze` (its baseline pass) vs a bare forward, on a 24-layer random
Llama-shaped LM, in one process with the runs interleaved round by round.

Compared, each round in turn:

- bare forward: ``model(**inputs)`` under no_grad (logits included, as analyze computes them);
- analyze pass: one forward of analyze, what it costs per method: every stream and sublayer
  state measured layer by layer as it arrives, and the quality (perplexity) of the outputs;
- analyze (all): ``run_analysis(..., AnalysisSettings(methods=()))``: that pass, plus the W_V W_O
  spectra of every block (on a background thread) and the attention sample (2 x 128 tokens,
  eager attention, every head's map and its eigenvalues);
- keep every state: the capture of all ``L + 1`` stream states, then ``measure`` on the list (how
  analyze worked before it measured layer by layer), to show what streaming saves.

Memory: on a GPU the CUDA allocator's peak; on the CPU the process's peak resident set (VmHWM,
reset through /proc/self/clear_refs after returning freed memory with malloc_trim). Printed as
the total peak and the peak above the loaded model (weights and inputs). Time: per round, and
the median over rounds of each run's ratio to the same round's bare forward.

Run: PYTHONPATH=src python benchmarks/bench_memory.py [--rounds 3] [--device cpu|cuda] [--dtype ...]
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import statistics
import time
from pathlib import Path

import torch

from oversmooth.analyze.analysis import AnalysisSettings, _stream_table, run_analysis
from oversmooth.analyze.quality import QualityProbe
from oversmooth.hf.capture import capture
from oversmooth.hf.placement import placement
from oversmooth.metrics import measure


def build(args, where) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.heads // 2,
        intermediate_size=int(2.75 * args.hidden),
        vocab_size=args.vocab,
        max_position_embeddings=args.tokens,
    )
    model = LlamaForCausalLM(config).to(where.device, where.dtype).eval()
    ids = torch.randint(0, args.vocab, (args.sequences, args.tokens), device=where.device)
    return model, {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


class Peak:
    """Peak memory of one call: CUDA allocator on a GPU, peak RSS on the CPU (bytes)."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.libc = None if self.cuda else ctypes.CDLL("libc.so.6")

    def _now(self) -> int:
        if self.cuda:
            return torch.cuda.memory_allocated()
        return _status("VmRSS")

    def run(self, fn) -> tuple[int, int, float]:
        """``(peak, resident before, seconds)`` of ``fn()``."""
        gc.collect()
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        else:
            self.libc.malloc_trim(0)
            Path("/proc/self/clear_refs").write_text("5")
        before = self._now()
        start = time.perf_counter()
        fn()
        if self.cuda:
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        peak = torch.cuda.max_memory_allocated() if self.cuda else _status("VmHWM")
        return peak, before, seconds


def _status(field: str) -> int:
    line = next(row for row in Path("/proc/self/status").read_text().splitlines() if row.startswith(field + ":"))
    return int(line.split()[1]) * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--sequences", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", default="auto")
    args = parser.parse_args()
    where = placement(args.device, args.dtype)
    model, inputs = build(args, where)
    settings = AnalysisSettings(methods=())

    def forward():
        with torch.no_grad():
            model(**inputs)

    def analyze_pass():
        _, outputs, _, _ = _stream_table(model, inputs, settings, stages=True)
        QualityProbe.for_model(model, inputs).observe(model, outputs)

    def analyze():
        run_analysis(model, inputs, settings)

    def keep_every_state():
        _, cache = capture(model, inputs, hooks=("resid_pre", "resid_post"))
        measure(cache.stream(), cache.mask)

    runs = {
        "bare forward": forward,
        "analyze pass": analyze_pass,
        "analyze (all)": analyze,
        "keep every state": keep_every_state,
    }
    peak = Peak(where.device)
    for fn in runs.values():  # warm-up: lazy init, the layout probe, allocator pools
        fn()
    found = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, fn in runs.items():
            found[name].append(peak.run(fn))
    parameters = sum(p.numel() for p in model.parameters())
    print(
        f"Llama-shaped random LM, {args.layers} layers x d {args.hidden}, {parameters / 1e6:.0f} M parameters, "
        f"{args.sequences} x {args.tokens} tokens, {where.device} {str(where.dtype).removeprefix('torch.')}, "
        f"torch threads {torch.get_num_threads()}, {args.rounds} interleaved rounds"
    )
    print(
        f"{'run':<26}{'peak MiB':>10}{'above model MiB':>17}{'best s':>9}{'peak ratio':>12}"
        f"{'above ratio':>13}{'time ratio':>12}"
    )
    bare = found["bare forward"]
    for name, rows in found.items():
        peak_bytes = max(r[0] for r in rows)
        above = max(r[0] - r[1] for r in rows)
        bare_peak, bare_above = max(r[0] for r in bare), max(r[0] - r[1] for r in bare)
        ratio = statistics.median(r[2] / b[2] for r, b in zip(rows, bare))
        print(
            f"{name:<26}{peak_bytes / 2**20:>10.0f}{above / 2**20:>17.0f}{min(r[2] for r in rows):>9.2f}"
            f"{peak_bytes / bare_peak:>12.2f}{above / bare_above:>13.2f}{ratio:>12.2f}"
        )
    print("targets: analyze <= 1.2x the bare forward's peak memory, <= 1.3x its time (paired median)")


if __name__ == "__main__":
    main()
