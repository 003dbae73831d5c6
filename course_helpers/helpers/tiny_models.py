"""The small models the course trains for its demos: attention layers whose W_q, W_k, W_v, W_o can
be loaded into the student's `MultiHeadAttention`, a one-layer model for the num_heads lab and a
small character-level transformer for real text.

The heads are computed with `einsum` on weights viewed per head (as `demos.fused_attention`
does), never by splitting activations: no helper holds an exercise's solution.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .exercises import PROJECTIONS

# The characters of the text model: newline and printable ASCII; anything else reads as "?".
CHARS = "\n" + "".join(chr(c) for c in range(32, 127))


def encode(text: str) -> torch.Tensor:
    """Character ids of `text` (unknown characters become "?")."""
    unknown = CHARS.index("?")
    return torch.tensor([CHARS.find(c) if c in CHARS else unknown for c in text], dtype=torch.long)


class Attention(nn.Module):
    """Multi-head self-attention held as W_q, W_k, W_v, W_o (nn.Linear(d_model, d_model)) and num_heads."""

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.num_heads, self.d_head = num_heads, d_model // num_heads
        for name in PROJECTIONS:
            setattr(self, name, nn.Linear(d_model, d_model))

    def _per_head(self, layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        weight = layer.weight.view(self.num_heads, self.d_head, -1)
        return torch.einsum("btd,hed->bhte", x, weight) + layer.bias.view(self.num_heads, 1, -1)

    def maps(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, H, T, T) attention weights; mask (T, T), True = may attend."""
        q, k = self._per_head(self.W_q, x), self._per_head(self.W_k, x)
        scores = torch.einsum("bhte,bhse->bhts", q, k) / math.sqrt(self.d_head)
        return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        heads = F.scaled_dot_product_attention(
            self._per_head(self.W_q, x), self._per_head(self.W_k, x), self._per_head(self.W_v, x), attn_mask=mask
        )
        weight = self.W_o.weight.view(self.W_o.out_features, self.num_heads, self.d_head)
        return torch.einsum("bhte,ohe->bto", heads, weight) + self.W_o.bias

    def projections(self) -> dict[str, torch.Tensor]:
        """W_q.weight, W_q.bias, ...: what `exercises.load_projections` copies into another module."""
        return {f"{n}.{p}": getattr(self, n).state_dict()[p].detach() for n in PROJECTIONS for p in ("weight", "bias")}


class TaskModel(nn.Module):
    """The num_heads lab's model: token and position embeddings, one attention layer, one read-out."""

    def __init__(self, vocab: int, length: int, d_model: int, num_heads: int, outputs: int):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d_model)
        self.positions = nn.Parameter(torch.randn(length, d_model) * 0.5)
        self.attention = Attention(d_model, num_heads)
        self.readout = nn.Linear(d_model, outputs)

    def embed(self, seq: torch.Tensor) -> torch.Tensor:
        """(B, T) ids -> (B, T, d_model): what the attention layer reads."""
        return self.tokens(seq) + self.positions[: seq.shape[1]]

    def forward(self, seq: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.embed(seq)
        return self.readout(x + self.attention(x, mask))


class Block(nn.Module):
    """Pre-norm transformer block: x + attention(norm(x)), then x + MLP(norm(x))."""

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attention = Attention(d_model, num_heads)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x), mask)
        return x + self.mlp(self.norm2(x))


class TextModel(nn.Module):
    """A character-level transformer: embeddings, `layers` causal blocks, a read-out of the next character."""

    def __init__(self, d_model: int = 64, num_heads: int = 4, layers: int = 2, context: int = 64):
        super().__init__()
        self.context = context
        self.tokens = nn.Embedding(len(CHARS), d_model)
        self.positions = nn.Parameter(torch.randn(context, d_model) * 0.02)
        self.blocks = nn.ModuleList(Block(d_model, num_heads) for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)
        self.readout = nn.Linear(d_model, len(CHARS))

    def forward(self, seq: torch.Tensor, keep_maps: bool = False):
        """Logits of the next character (B, T, chars); with keep_maps, also each layer's (B, H, T, T) maps."""
        T = seq.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        x = self.tokens(seq) + self.positions[:T]
        maps = []
        for block in self.blocks:
            if keep_maps:
                maps.append(block.attention.maps(block.norm1(x), mask))
            x = block(x, mask)
        logits = self.readout(self.norm(x))
        return (logits, maps) if keep_maps else logits
