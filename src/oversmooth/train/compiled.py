"""``torch.compile`` of the training forward, falling back to eager when it cannot compile.

Compilation is lazy: a missing C++ compiler (CPU), a missing Triton (GPU) or any other
compiler failure shows up only when the compiled forward (or its backward) first runs. So the
first training step runs under a guard: if it fails inside the compiler, the RNG is put back,
one line says why, and that step and every later one run eagerly, exactly as without
``--compile``. Errors of the model itself are not hidden: the eager retry raises them again.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

import torch
from torch import nn

from oversmooth.train.checkpoint import rng_state, set_rng_state

Result = TypeVar("Result")


def compiler_error(error: BaseException) -> bool:
    """True for errors raised by dynamo / inductor (``torch._dynamo.exc``), not by the model."""
    from torch._dynamo.exc import TorchDynamoException

    return isinstance(error, TorchDynamoException)


class CompiledForward:
    """Runs training steps with ``torch.compile(module)`` once it has compiled, else ``module``.

    ``run(step)`` calls ``step(forward)``, where ``step`` does forward and backward with the given
    module; ``compiled`` says which path is in use (False after a fallback). ``quiet``: no note
    (DDP processes other than the main one).
    """

    def __init__(self, module: nn.Module, enabled: bool, quiet: bool = False):
        self.eager = module
        if enabled:  # dropout draws eager's masks from eager's RNG stream, so runs match eager ones
            from torch._inductor import config as inductor

            inductor.fallback_random = True
        self.forward: nn.Module = torch.compile(module) if enabled else module
        self.compiled = enabled
        self._untried = enabled
        self._quiet = quiet

    def run(self, step: Callable[[nn.Module], Result]) -> Result:
        if not self._untried:
            return step(self.forward)
        saved = rng_state()
        try:
            result = step(self.forward)
        except Exception as error:
            if not compiler_error(error):
                raise
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            if not self._quiet:
                print(f"--compile: torch.compile failed ({reason}); training eagerly instead", file=sys.stderr)
            set_rng_state(saved)
            self.forward, self.compiled = self.eager, False
            result = step(self.forward)
        self._untried = False
        return result
