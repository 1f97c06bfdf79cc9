"""Decoding one input step by step, for the slides (Section 6.1 of Vaswani et al., 2017).

:func:`greedy_step_table` lists, at each step of greedy decoding, the prefix, the top next
tokens with their probabilities (the tied output projection of Section 3.4, then a
softmax) and the chosen one. :func:`beam_tree` runs beam search on one input and records
every expansion it ranks: the candidates kept, those finished with their length-penalised
score, and those pruned. It follows :func:`transformer_lab.beam_search` rule for rule
(the best 2k extensions per step; EOS among the top k finishes; the best k others go on)
but recomputes the whole prefix at each step instead of using the cache, which is slower
and clearer; a test checks that its best hypothesis is ``beam_search``'s.
:func:`output_layer` catches the last decoder vector of one step on its way into the
output projection, so a slide can compute the logits and the softmax by hand.

Shapes: S source length, L prefix length, k beam size, V vocabulary.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch

from .. import checks
from ..decoding import gnmt_length_penalty
from ..model import Transformer


@dataclass(frozen=True)
class DecodingStep:
    """One greedy step: the prefix read, the ``top`` next tokens and their probabilities."""

    prefix: list[int]
    top_ids: list[int]
    top_probs: list[float]
    chosen: int


def _check(model: Transformer, src: torch.Tensor, max_len: int) -> None:
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a transformer_lab.Transformer, got {type(model).__name__}")
    if not isinstance(src, torch.Tensor) or src.dim() != 2 or src.size(0) != 1:
        raise ValueError(f"src must be a (1, S) tensor of token ids (one input), got {getattr(src, 'shape', src)!r}")
    checks.positive_int("max_len", max_len)


@torch.no_grad()
def _next_log_probs(model: Transformer, memory, src_mask, prefixes: list[list[int]]) -> torch.Tensor:
    """log P(next token | prefix, source) for prefixes of one length: (n, V), in float32."""
    tgt = torch.tensor(prefixes, device=memory.device)  # (n, L)
    n = len(prefixes)
    logits = model.decode(tgt, memory.expand(n, -1, -1), src_mask.expand(n, -1, -1, -1))[:, -1]  # (n, V)
    return torch.log_softmax(logits.float(), dim=-1)


@torch.no_grad()
def greedy_step_table(model: Transformer, src: torch.Tensor, bos_id: int, eos_id: int, max_len: int,
                      top: int = 5) -> list[DecodingStep]:
    """Greedy decoding of ``src`` (1, S), one :class:`DecodingStep` per generated token,
    until ``eos_id`` or ``max_len`` tokens (``<bos>`` included); the chosen tokens are
    :func:`transformer_lab.greedy_decode`'s."""
    _check(model, src, max_len)
    checks.positive_int("top", top)
    model.eval()
    src_mask = model.src_mask(src)  # (1, 1, 1, S)
    memory = model.encode(src, src_mask)  # (1, S, D)
    prefix, steps = [bos_id], []
    while len(prefix) < max_len:
        probs = _next_log_probs(model, memory, src_mask, [prefix])[0].exp()  # (V,)
        values, ids = probs.topk(min(top, probs.numel()))
        chosen = int(probs.argmax())
        steps.append(DecodingStep(list(prefix), ids.tolist(), values.tolist(), chosen))
        prefix.append(chosen)
        if chosen == eos_id:
            break
    return steps


@dataclass(frozen=True)
class OutputLayer:
    """One decoding step at the output layer (Section 3.4): ``hidden`` (D,), the last
    decoder vector at the prefix's last position; ``logits`` (V,) and ``probs`` (V,), what
    the model itself computes from it (its output projection, then a softmax)."""

    hidden: torch.Tensor
    logits: torch.Tensor
    probs: torch.Tensor


@torch.no_grad()
def output_layer(model: Transformer, src: torch.Tensor, prefix: list[int]) -> OutputLayer:
    """Run ``model`` on ``src`` (1, S) and the target ``prefix`` (token ids, ``<bos>``
    first) in evaluation mode and return the vector that enters its output projection at
    the prefix's last position (caught by a forward hook, so the model runs unchanged),
    with the logits and the probabilities it gives the next token."""
    _check(model, src, 1)
    if not prefix or not all(isinstance(i, int) for i in prefix):
        raise ValueError(f"prefix must be a non-empty list of token ids, got {prefix!r}")
    model.eval()
    caught = []
    hook = model.output_projection.register_forward_hook(lambda module, args, out: caught.append(args[0]))
    try:
        logits = model(src, torch.tensor([prefix], device=src.device))[0, -1]  # (V,)
    finally:
        hook.remove()
    return OutputLayer(caught[0][0, -1], logits, torch.softmax(logits.float(), dim=-1))


def untrained_like(model: Transformer, seed: int = 0) -> Transformer:
    """A freshly initialised model of ``model``'s configuration, in evaluation mode: the same
    shapes and vocabulary, no training. Seeded by ``seed`` (the same weights on every call),
    without touching the global random state, so the cells after it draw what they drew before."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        fresh = type(model)(model.config)
    return fresh.to(next(model.parameters()).device).eval()


@dataclass(frozen=True)
class BeamNode:
    """A candidate ranked at ``step``: ``parent`` is the node it extends (``None`` for the
    root, ``<bos>``), ``score`` its log P(Y | X) so far; ``status`` is "kept", "finished"
    (then ``final`` is its length-penalised score) or "pruned" (not among the best k, or
    alive when the search stopped); ``rank`` its place among
    the step's 2k candidates."""

    id: int
    parent: int | None
    step: int
    rank: int
    token: int
    score: float
    status: str
    final: float | None = None


@dataclass
class BeamTree:
    """Every node :func:`beam_tree` ranked, the finished hypotheses as (final score,
    token ids), and the best of them."""

    beam_size: int
    length_penalty: float
    nodes: list[BeamNode] = field(default_factory=list)
    finished: list[tuple[float, list[int]]] = field(default_factory=list)

    @property
    def best(self) -> list[int]:
        return max(self.finished, key=lambda f: f[0])[1]

    def tokens(self, node_id: int) -> list[int]:
        """The token ids from the root to ``node_id``."""
        out = []
        while node_id is not None:
            node = self.nodes[node_id]
            out.append(node.token)
            node_id = node.parent
        return out[::-1]


@torch.no_grad()
def beam_tree(model: Transformer, src: torch.Tensor, beam_size: int, max_len: int, bos_id: int, eos_id: int,
              length_penalty: float = 0.6) -> BeamTree:
    """Beam search on ``src`` (1, S), recorded as a :class:`BeamTree` (module docstring)."""
    _check(model, src, max_len)
    k = checks.positive_int("beam_size", beam_size)
    model.eval()
    src_mask = model.src_mask(src)  # (1, 1, 1, S)
    memory = model.encode(src, src_mask)  # (1, S, D)
    tree = BeamTree(k, length_penalty, [BeamNode(0, None, 0, 0, bos_id, 0.0, "kept")])
    live = [0]  # node ids of the live prefixes; the first expansion starts from <bos> alone
    for step in range(1, max_len):
        log_p = _next_log_probs(model, memory, src_mask, [tree.tokens(i) for i in live])  # (n, V)
        scores = torch.full((k, log_p.size(1)), float("-inf"))  # (k, V): missing beams never win
        scores[: len(live)] = torch.tensor([tree.nodes[i].score for i in live])[:, None] + log_p
        top_scores, top_index = scores.view(-1).topk(2 * k)  # (2k,), as beam_search ranks them
        last, kept = step == max_len - 1, []
        for rank, (score, index) in enumerate(zip(top_scores.tolist(), top_index.tolist())):
            if score == float("-inf"):
                continue
            parent, token = live[index // log_p.size(1)], index % log_p.size(1)
            node_id = len(tree.nodes)
            if rank < k and (last or token == eos_id):
                final = score / gnmt_length_penalty(step, length_penalty)
                tree.nodes.append(BeamNode(node_id, parent, step, rank, token, score, "finished", final))
                tree.finished.append((final, tree.tokens(node_id)))
            else:
                status = "kept" if token != eos_id and len(kept) < k else "pruned"
                tree.nodes.append(BeamNode(node_id, parent, step, rank, token, score, status))
                if status == "kept":
                    kept.append(node_id)
        best_live = tree.nodes[kept[0]].score if kept else float("-inf")
        kth_best = sorted((f for f, _ in tree.finished), reverse=True)[k - 1] if len(tree.finished) >= k else None
        done = kth_best is not None and (best_live == float("-inf")
                                         or kth_best >= best_live / gnmt_length_penalty(step, length_penalty))
        if done or last:  # beam_search's rule: the prefixes still alive are dropped
            for i in kept:
                tree.nodes[i] = dataclasses.replace(tree.nodes[i], status="pruned")
            break
        live = kept
    return tree
