"""What a trained encoder's heads do with "it": the statistic behind the pronoun slides.

The paper's Figure 4 shows two heads in layer 5 of 6 "apparently involved in anaphora
resolution". On the generated ``pronoun`` task (``transformer_lab.data.tasks``) the
question can be measured: over held-out sentences, how much encoder self-attention weight
(equation 1, Section 3.2.3) does each head put from the query "it" on the noun "it" refers
to, and how often more than on the other noun?

    stats = antecedent_attention(model, src_vocab, data.test)
    stats.more_on_antecedent     # (L, H) share of sentences: weight(antecedent) > weight(other noun)
    stats.best_head()            # (layer, head) with the largest share

Shapes: L encoder layers, H heads, N sentences, S source length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
from torch.nn.utils.rnn import pad_sequence

from ..data import ANIMALS, PLACES, Vocabulary
from ..model import Transformer
from ..recording import record_attention

PRONOUN = "it"


@dataclass(frozen=True)
class AntecedentAttention:
    """Per encoder layer and head, (L, H) tensors over ``examples`` sentences: the share
    of sentences where the antecedent gets more weight from "it" than the other noun, and
    the mean weight on each of the two nouns."""

    more_on_antecedent: torch.Tensor  # (L, H)
    weight_on_antecedent: torch.Tensor  # (L, H)
    weight_on_other: torch.Tensor  # (L, H)
    examples: int

    def best_head(self) -> tuple[int, int]:
        """(layer, head) whose share of sentences is the largest."""
        flat = int(self.more_on_antecedent.argmax())
        return divmod(flat, self.more_on_antecedent.size(1))


def noun_positions(sentence: str, antecedent: str, nouns: Sequence[str] = ANIMALS + PLACES) -> tuple[int, int, int]:
    """Word positions of "it", of the antecedent and of the other noun in ``sentence``."""
    words = sentence.split()
    if words.count(PRONOUN) != 1 or words.count(antecedent) != 1:
        raise ValueError(f"sentence must hold {PRONOUN!r} and the antecedent {antecedent!r} once each, "
                         f"got {sentence!r}")
    others = [i for i, w in enumerate(words) if w in nouns and w != antecedent]
    if len(others) != 1:
        raise ValueError(f"sentence must hold exactly one noun besides {antecedent!r}, got {sentence!r}")
    return words.index(PRONOUN), words.index(antecedent), others[0]


@torch.no_grad()
def encoder_attention(model: Transformer, src_vocab: Vocabulary, sentences: Sequence[str]) -> torch.Tensor:
    """Encoder self-attention weights of every layer for ``sentences``: (L, N, H, S, S),
    padded to the longest sentence (padded keys get weight 0)."""
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a transformer_lab.Transformer, got {type(model).__name__}")
    if not sentences:
        raise ValueError("sentences must hold at least one sentence")
    model.eval()
    device = next(model.parameters()).device
    ids = [torch.tensor(src_vocab.encode(s)) for s in sentences]  # each (S_i,), ending in <eos>
    src = pad_sequence(ids, batch_first=True, padding_value=model.config.pad_id).to(device)  # (N, S)
    with record_attention(model, [layer.self_attn for layer in model.encoder.layers]) as attn:
        model.encode(src, model.src_mask(src))
    return torch.stack(attn.encoder).cpu()  # (L, N, H, S, S)


def antecedent_attention(model: Transformer, src_vocab: Vocabulary,
                         pairs: Sequence[tuple[str, str]]) -> AntecedentAttention:
    """The statistic of the module docstring over ``pairs`` of (sentence, antecedent)."""
    weights = encoder_attention(model, src_vocab, [s for s, _ in pairs])  # (L, N, H, S, S)
    positions = torch.tensor([noun_positions(s, a) for s, a in pairs])  # (N, 3): it, antecedent, other
    n = torch.arange(len(pairs))
    per_sentence = weights.transpose(0, 1)  # (N, L, H, S, S)
    from_it = per_sentence[n, :, :, positions[:, 0]]  # (N, L, H, S): the row of the query "it"
    right = from_it[n, :, :, positions[:, 1]]  # (N, L, H)
    other = from_it[n, :, :, positions[:, 2]]  # (N, L, H)
    return AntecedentAttention((right > other).float().mean(0), right.mean(0), other.mean(0), len(pairs))


def weights_from_it(model: Transformer, src_vocab: Vocabulary, sentence: str, layer: int,
                    head: int) -> tuple[torch.Tensor, list[str]]:
    """One head's weights from "it" over the words of ``sentence`` (S,), and the words
    (the source's ``<eos>`` included, as the encoder sees it)."""
    if PRONOUN not in sentence.split():
        raise ValueError(f"sentence must contain {PRONOUN!r}, got {sentence!r}")
    weights = encoder_attention(model, src_vocab, [sentence])[layer, 0, head]  # (S, S)
    ids = src_vocab.encode(sentence)
    return weights[sentence.split().index(PRONOUN)], [src_vocab.itos[i] for i in ids]


def antecedent_attention_by_kind(model: Transformer, src_vocab: Vocabulary,
                                 examples: Sequence[tuple[str, str]]) -> dict[str, AntecedentAttention]:
    """:func:`antecedent_attention` on the sentences whose antecedent is an animal and on
    those whose antecedent is a place, apart: ``{"animal": ..., "place": ...}``."""
    kinds = {kind: [(s, n) for s, n in examples if (n in ANIMALS) == (kind == "animal")]
             for kind in ("animal", "place")}
    if not all(kinds.values()):
        raise ValueError("examples must hold sentences about both an animal and a place, got "
                         f"{len(kinds['animal'])} about an animal and {len(kinds['place'])} about a place")
    return {kind: antecedent_attention(model, src_vocab, pairs) for kind, pairs in kinds.items()}


def head_for_both_kinds(model: Transformer, src_vocab: Vocabulary,
                        examples: Sequence[tuple[str, str]]) -> tuple[int, int]:
    """(layer, head) that prefers the antecedent most often in sentences about the animal
    AND about the place: per head, the share of :func:`antecedent_attention` is taken on
    each kind of antecedent apart and the worse of the two counts. Some heads find the
    animal almost always and the place far less often; :meth:`AntecedentAttention.best_head`
    over all sentences would pick such a head."""
    by_kind = antecedent_attention_by_kind(model, src_vocab, examples)
    share = torch.minimum(by_kind["animal"].more_on_antecedent, by_kind["place"].more_on_antecedent)
    return divmod(int(share.argmax()), share.size(1))
