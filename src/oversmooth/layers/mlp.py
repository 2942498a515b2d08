"""The position-wise feed-forward sub-layer."""

from __future__ import annotations

from torch import Tensor, nn


class MLP(nn.Module):
    """``Linear(d, r d) -> GELU -> Linear(r d, d) -> dropout`` on ``[batch, tokens, d]``."""

    def __init__(self, width: int, hidden: int, dropout: float = 0.0):
        super().__init__()
        self.fc_in = nn.Linear(width, hidden)
        self.act = nn.GELU()
        self.fc_out = nn.Linear(hidden, width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.fc_out(self.act(self.fc_in(x))))
