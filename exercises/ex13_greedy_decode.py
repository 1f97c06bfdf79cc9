"""Exercise 13: the key/value cache and greedy decoding (Section 6.1). Check it with
`make exercises N=13`.

The report of `make exercises` names the slide that explains it.

Decoding feeds one new token per step; each attention layer keeps the keys and values of
the earlier steps in a cache, so a step costs the same at the end of the output as at its
start. ``KVCache`` is the package's cache with ``update`` left for you; ``greedy_decode``
uses the model's own caches (``model.new_cache()``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class KVCache:
    """Projected keys ``k`` (B, H, S, K) and values ``v`` (B, H, S, Kv) of one attention
    layer, kept between decoding steps. A self-attention cache grows by one position per
    decoded token; a cross-attention cache (``static=True``) holds the keys and values of
    the encoder's memory, computed at the first step and read at every later one."""

    k: Tensor | None = None
    v: Tensor | None = None
    static: bool = False

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.size(-2)

    @property
    def filled(self) -> bool:
        """A static cache that already holds the memory's keys and values."""
        return self.static and self.k is not None

    def update(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Keep this call's keys (B, H, S, K) and values (B, H, S, Kv) and return every
        stored one, as the pair (k, v): a self-attention cache appends them after the
        earlier steps' along the sequence axis; a static cache keeps just these."""
        raise NotImplementedError

    def reorder(self, index: Tensor) -> None:
        """Keep the batch rows ``index`` (beam search reorders hypotheses)."""
        if self.k is not None:
            self.k = self.k.index_select(0, index)
            self.v = self.v.index_select(0, index)


@torch.no_grad()
def greedy_decode(model, src: Tensor, max_len: int, bos_id: int, eos_id: int, use_cache: bool = True,
                  src_mask: Tensor | None = None) -> Tensor:
    """Pick the most likely next token at every step: src (B, S) -> LongTensor (B, L),
    L <= max_len.

    ``model`` is a ``transformer_lab.Transformer``. Encode once: ``src_mask`` defaults to
    ``model.src_mask(src)`` and ``memory = model.encode(src, src_mask)``. Start every row
    with ``bos_id``; at each step ``logits = model.decode(new, memory, src_mask,
    cache=cache)[:, -1]`` (B, V), where ``new`` is the last token (B, 1) with
    ``cache = model.new_cache()`` (``use_cache=True``), or the whole prefix with
    ``cache=None``; append the argmax. After a row's ``eos_id`` the row holds
    ``model.config.pad_id``. Stop when the output has ``max_len`` tokens (BOS included)
    or when every row has produced ``eos_id``.
    """
    raise NotImplementedError
