"""Exercise 14: beam search with the length penalty (Section 6.1). Check it with
`make exercises N=14`.

The report of `make exercises` names the slide that explains it.

Section 6.1: "We used beam search with a beam size of 4 and length penalty alpha = 0.6".
The length penalty is GNMT's (Wu et al., 2016).
"""

from __future__ import annotations

import torch
from torch import Tensor


def gnmt_length_penalty(length: int, alpha: float) -> float:
    """lp(Y) = ((5 + |Y|) / 6) ** alpha; alpha = 0 turns it off (lp = 1)."""
    raise NotImplementedError


@torch.no_grad()
def beam_search(model, src: Tensor, beam_size: int, max_len: int, bos_id: int, eos_id: int,
                length_penalty: float = 0.6, src_mask: Tensor | None = None) -> Tensor:
    """Keep the ``beam_size`` (k) best prefixes of each example; return the best finished
    hypothesis of each: src (B, S) -> LongTensor (B, L), L <= max_len, laid out like
    greedy decoding (BOS first, ``model.config.pad_id`` after EOS and in shorter rows).

    ``model`` is a ``transformer_lab.Transformer``; decode with its cache as in exercise 13
    (``model.encode``, ``model.decode(..., cache=cache)``, ``model.new_cache()``), with the
    memory and ``src_mask`` repeated k times per example (``repeat_interleave``), and keep
    the cache's rows with the hypotheses (``cache.reorder(rows)``). To give the package's
    answer, follow its rules exactly:

    - A hypothesis' score is the sum of the log-probabilities (log-softmax of the logits)
      of its tokens. At the start only one beam per example is live (score 0; the others
      -inf), so the first step does not pick k copies of one token.
    - Step n = 1, 2, ..., max_len - 1: extend each live prefix by every token and take the
      2k best candidates of each example (``topk`` over its k * V scores).
    - Among the top k candidates, those ending in ``eos_id`` are finished, with score
      log P(Y) / lp(n) (|Y| = n counts the generated tokens, EOS included). At the last
      step, n = max_len - 1, every one of the top k is finished, EOS or not.
    - An example is done once it has k finished hypotheses and the k-th best of their
      scores is at least the best live candidate's log P / lp(n) (or at the last step).
      Stopping at the first k finished would let weak beams' EOS end the search while a
      far likelier prefix is still growing.
    - The k best candidates that do not end in EOS are the next step's live prefixes.
    - The answer is each example's finished hypothesis with the best normalised score.

    ``max_len == 1`` returns the BOS column alone.
    """
    raise NotImplementedError
