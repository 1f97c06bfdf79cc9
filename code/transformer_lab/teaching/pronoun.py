"""What a trained encoder's heads do with "it": the statistic behind the pronoun slides.

The paper's Figure 4 shows two heads in layer 5 of 6 "apparently involved in anaphora
resolution". On the generated ``pronoun`` task (``transformer_lab.data.tasks``) the
question can be measured: over held-out sentences, how much encoder self-attention weight
(equation 1, Section 3.2.3) does each head put from the query "it" on the noun "it" refers
to, and how often more than on the other noun?

    stats = antecedent_attention(model, src_vocab, data.test)
    stats.more_on_antecedent     # (L, H) share of sentences: weight(antecedent) > weight(other noun)
    choice = contrast_head(model, src_vocab, [(tired, "cat"), (wide, "road")])
    choice.layer, choice.head    # the last layer's head that separates these sentences' nouns best
    choice.near                  # every head within the rule's margin of it: a claim must hold for each

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


def place_preference(model: Transformer, src_vocab: Vocabulary,
                     examples: Sequence[tuple[str, str]]) -> dict[str, torch.Tensor]:
    """(L, H) per kind of antecedent: the share of sentences in which "it" weights the place
    above the animal, right or wrong, over the sentences whose antecedent is the place
    (``"place"``) and those whose antecedent is the animal (``"animal"``). A head whose
    choice between the nouns cannot depend on the meaning gives both about the same share."""
    out = {}
    for kind in ("place", "animal"):
        subset = [(s, next(w for w in s.split() if w in PLACES)) for s, n in examples
                  if (n in PLACES) == (kind == "place")]
        if not subset:
            raise ValueError(f"examples must hold sentences about both an animal and a place, got none whose "
                             f"antecedent is the {kind}")
        out[kind] = antecedent_attention(model, src_vocab, subset).more_on_antecedent
    return out


@dataclass(frozen=True)
class HeadChoice:
    """A head chosen by :func:`contrast_head`'s rule. ``ratio`` (H,) is the rule's statistic
    for every head of ``layer``; ``near`` holds the heads whose ratio is within the rule's
    margin of the chosen one (itself included), in order of ratio: another build may rank
    them the other way round, so what a slide says of the chosen head must hold for each."""

    layer: int
    head: int
    ratio: torch.Tensor  # (H,)
    near: tuple[int, ...]


def contrast_head(model: Transformer, src_vocab: Vocabulary, pairs: Sequence[tuple[str, str]],
                  layer: int = -1, margin: float = 2.0) -> HeadChoice:
    """The head of ``layer`` (default: the last) whose weights from "it" tell the nouns of
    ``pairs`` of (sentence, antecedent) apart best. Per head, the statistic is the smallest,
    over the pairs, of weight(antecedent) / weight(other noun): a head that reads "cat" in
    one sentence and "road" in the other scores high only if it does both. The chosen head
    has the largest; ``near`` lists every head within a factor ``margin`` of it (ties and
    near-ties), so that a claim checked on all of them cannot rest on a tie-break."""
    if not pairs:
        raise ValueError("pairs must hold at least one (sentence, antecedent) pair")
    if not margin >= 1.0:
        raise ValueError(f"margin must be a factor of at least 1, got {margin!r}")
    num_layers = model.config.num_layers
    if not -num_layers <= layer < num_layers:
        raise ValueError(f"layer must be in [-{num_layers}, {num_layers}), got {layer}")
    layer %= num_layers
    ratios = []
    for sentence, antecedent in pairs:
        it, right, other = noun_positions(sentence, antecedent)
        weights = encoder_attention(model, src_vocab, [sentence])[layer, 0, :, it]  # (H, S)
        ratios.append(weights[:, right] / weights[:, other].clamp_min(1e-12))       # (H,)
    ratio = torch.stack(ratios).amin(0)  # (H,): the worse of the pairs
    best = int(ratio.argmax())
    order = ratio.argsort(descending=True).tolist()
    near = tuple(h for h in order if ratio[h] * margin >= ratio[best])
    return HeadChoice(layer, best, ratio, near)
