"""Where token similarity rises and falls inside each block: ``cos_sim`` and ``t_sim`` before and
after every sublayer and every norm that sits in the residual stream, from one capture pass.

Numbering is the toolkit's one (``oversmooth.activations``): state 0 is the embedding output,
state ``l`` the output of block ``l`` (before any final norm); a stage of block ``l`` moves the stream from state
``l - 1`` towards state ``l``. Stages in stream order, with the hook point each one ends at:

- pre-LN (``Family.residual == "pre"``: GPT-2, Llama, ViT, ...): ``attention`` (-> ``resid_mid``),
  ``mlp`` (-> ``resid_post``). Their norms sit inside the branches; only the final norm acts on
  the stream, as one more stage ``final_norm`` of block L (state L -> ``hook_final_norm_out``).
- post-LN (BERT, RoBERTa, DistilBERT, ...): ``attention`` (-> ``resid_mid``, the sum before the
  norm), ``attn_norm`` (-> ``mid_norm_out``), ``mlp`` (-> ``out_norm_in``, the sum before the
  norm), ``mlp_norm`` (-> ``resid_post``).
- parallel (GPT-NeoX, Phi): both branches read the block input and are added to it together, so
  the block has no state between them. The stages are the pre-LN ones over a split we choose:
  ``attention`` adds the attention branch alone (-> ``resid_mid = resid_pre + attn_out``, a
  state the model never forms), ``mlp`` then adds the MLP branch (-> ``resid_post``). The
  changes of one block still add up; how they divide between the two depends on that order.

A stage's ``after`` is the next stage's ``before``, so the changes of block ``l`` add up to
state ``l`` minus state ``l - 1`` (for block L of a pre-LN model: up to the final norm's output).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from torch import Tensor

from oversmooth.activations import hook_name
from oversmooth.analyze.layerwise import LayerwiseMeasures
from oversmooth.hf import Family, capture, check_model_inputs, layout
from oversmooth.metrics import check_measures

STAGE_METRICS = check_measures(("cos_sim", "t_sim"))
KINDS = {
    "attention": "attention",
    "attn_norm": "norm",
    "mlp": "mlp",
    "mlp_norm": "norm",
    "final_norm": "norm",
}  # stage -> kind
_PRE_LN = (("attention", "resid_mid"), ("mlp", "resid_post"))  # (stage, hook point it ends at)
_POST_LN = (
    ("attention", "resid_mid"),
    ("attn_norm", "mid_norm_out"),
    ("mlp", "out_norm_in"),
    ("mlp_norm", "resid_post"),
)


@dataclass(frozen=True)
class StageChange:
    """One stage of one block: means over sequences (undefined sequences skipped) of the measures
    of its input (``before``) and output (``after``), and ``change = after - before``."""

    layer: int
    stage: str
    cos_sim_before: float
    cos_sim_after: float
    cos_sim_change: float
    t_sim_before: float
    t_sim_after: float
    t_sim_change: float

    @property
    def kind(self) -> str:
        """``attention``, ``mlp`` or ``norm``."""
        return KINDS[self.stage]


@dataclass(frozen=True)
class KindTotal:
    """The summed changes of one kind of stage (``attention``, ``mlp`` or ``norm``) in one block."""

    layer: int
    kind: str
    cos_sim_change: float
    t_sim_change: float


def stage_hooks(family: Family) -> tuple[str, ...]:
    """The hook points the stages end at, for ``capture(hooks=...)`` beside ``resid_pre``."""
    chain = _POST_LN if family.residual == "post" else _PRE_LN
    return (*(hook for _, hook in chain), *(("final_norm_out",) if family.final_norm else ()))


def stage_states(family: Family, layers: int) -> list[tuple[int, str, str]]:
    """``(block, stage, hook name of its output state)`` in stream order (blocks 1-based), after the
    first state ``(0, "", blocks.0.hook_resid_pre)``."""
    chain = _POST_LN if family.residual == "post" else _PRE_LN
    states = [(0, "", hook_name(0, "resid_pre"))]
    states += [(block + 1, stage, hook_name(block, hook)) for block in range(layers) for stage, hook in chain]
    return states + ([(layers, "final_norm", "hook_final_norm_out")] if family.final_norm else [])


def changes_from_rows(rows: Mapping[str, Mapping[str, float]], family: Family, layers: int) -> list[StageChange]:
    """Every stage of every block from the ``cos_sim`` / ``t_sim`` rows of its states by hook name
    (``LayerwiseMeasures.rows`` of a capture of ``resid_pre`` and ``stage_hooks(family)``)."""
    states = stage_states(family, layers)
    return [
        _change(layer, stage, rows[before], rows[after])
        for (_, _, before), (layer, stage, after) in zip(states, states[1:])
    ]


def sublayer_changes(model, inputs: Mapping[str, Tensor], exclude: Sequence[int] = ()) -> list[StageChange]:
    """Every stage of every block of a loaded Hugging Face ``model`` on ``inputs``, in stream order.

    ``inputs`` as for ``capture`` (``input_ids`` / ``attention_mask`` ``[B, n]``, or
    ``pixel_values``); padding is never counted and ``exclude`` positions (e.g. ``(0,)`` for CLS)
    are left out of every measure. One forward pass.

    >>> import torch
    >>> from transformers import BertConfig, BertModel
    >>> model = BertModel(BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
    ...                              intermediate_size=8, vocab_size=10)).eval()
    >>> rows = sublayer_changes(model, {"input_ids": torch.tensor([[1, 2, 3, 4]])})
    >>> [(row.layer, row.stage) for row in rows]
    [(1, 'attention'), (1, 'attn_norm'), (1, 'mlp'), (1, 'mlp_norm')]
    >>> rows[0].t_sim_after == rows[1].t_sim_before
    True
    """
    check_model_inputs(inputs)
    lay = layout(model)
    mask = inputs.get("attention_mask")
    measures = LayerwiseMeasures(
        {name: STAGE_METRICS for _, _, name in stage_states(lay.family, lay.depth)},
        None if mask is None else mask.bool(),
        tuple(exclude),
    )
    capture(model, inputs, hooks=("resid_pre", *stage_hooks(lay.family)), sink=measures)
    measures.finish()
    return changes_from_rows(measures.rows, lay.family, lay.depth)


def _change(layer: int, stage: str, before: dict[str, float], after: dict[str, float]) -> StageChange:
    values = {}
    for metric in STAGE_METRICS:
        values |= {
            f"{metric}_before": before[metric],
            f"{metric}_after": after[metric],
            f"{metric}_change": after[metric] - before[metric],
        }
    return StageChange(layer=layer, stage=stage, **values)


def block_totals(rows: Sequence[StageChange]) -> list[KindTotal]:
    """Per block, the changes summed by kind: ``attention``, ``mlp``, ``norm`` (kinds without a
    stage in that block are left out). A pre-LN model's final norm counts as norm of block L."""
    sums: dict[tuple[int, str], list[float]] = {}
    for row in rows:
        total = sums.setdefault((row.layer, row.kind), [0.0, 0.0])
        total[0] += row.cos_sim_change
        total[1] += row.t_sim_change
    order = ("attention", "mlp", "norm")
    return [
        KindTotal(layer, kind, *sums[layer, kind])
        for layer, kind in sorted(sums, key=lambda key: (key[0], order.index(key[1])))
    ]
