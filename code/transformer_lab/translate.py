"""Translate with a trained checkpoint: ``python -m transformer_lab.translate --help``.

    python -m transformer_lab.translate --checkpoint runs/dates "the fourth of july nineteen ninety-nine"
    python -m transformer_lab.translate --checkpoint runs/dates --beam-size 4 --show-alignment "..."

Greedy decoding or beam search with GNMT's length penalty (Section 6.1 of Vaswani et al.,
2017: beam 4, alpha 0.6, at most input length + 50 tokens). ``--show-alignment`` prints the
encoder-decoder ("cross") attention weights of the output (Section 3.2.3) as a text table,
averaged over the heads of the last layer unless ``--layer``/``--head`` pick one.
"""

from __future__ import annotations

import argparse
import sys
import warnings

import torch

from .checkpoint import CheckpointError, load_checkpoint, resolve_checkpoint
from .data import BOS_ID, EOS_ID, Vocabulary
from .decoding import beam_search, greedy_decode
from .model import Transformer, TransformerConfig


def load_model(checkpoint: str, prefer_averaged: bool = True, device: str | torch.device = "cpu"):
    """(model in eval mode, source vocabulary, target vocabulary) from a checkpoint file or
    a run's output directory (the averaged model when there is one)."""
    state = load_checkpoint(resolve_checkpoint(checkpoint, prefer_averaged=prefer_averaged))
    model = Transformer(TransformerConfig(**state["config"]))
    model.load_state_dict(state["model"])
    return (model.to(device).eval(), Vocabulary.from_dict(state["src_vocab"]),
            Vocabulary.from_dict(state["tgt_vocab"]))


@torch.no_grad()
def translate(model: Transformer, src_vocab: Vocabulary, tgt_vocab: Vocabulary, text: str,
              beam_size: int = 1, length_penalty: float = 0.6, max_extra: int = 50) -> tuple[list[int], torch.Tensor]:
    """Output ids (``<bos>`` ... ``<eos>``) for ``text`` and the source ids (1, S).
    Unknown source symbols become ``<unk>`` with a warning (from ``Vocabulary.encode``)."""
    device = next(model.parameters()).device
    src = torch.tensor([src_vocab.encode(text)], dtype=torch.long, device=device)  # (1, S)
    max_len = min(src.size(1) + max_extra, model.config.max_len)
    if beam_size == 1:
        out = greedy_decode(model, src, max_len, BOS_ID, EOS_ID)
    else:
        out = beam_search(model, src, beam_size, max_len, BOS_ID, EOS_ID, length_penalty)
    ids = out[0].tolist()
    if EOS_ID in ids:
        ids = ids[: ids.index(EOS_ID) + 1]
    return ids, src


@torch.no_grad()
def cross_attention(model: Transformer, src: torch.Tensor, out_ids: list[int], layer: int = -1,
                    head: int | None = None) -> torch.Tensor:
    """Cross-attention weights (T, S) of the decoder reading ``out_ids`` (teacher forcing):
    row t is what output token t+1 attended to when it was predicted. Averaged over heads
    unless ``head`` is given."""
    tgt = torch.tensor([out_ids[:-1]], dtype=torch.long, device=src.device)  # (1, T)
    _, weights = model(src, tgt, need_weights=True)
    num_layers, num_heads = model.config.num_layers, model.config.num_heads
    if not -num_layers <= layer < num_layers:
        raise ValueError(f"layer must be in [{-num_layers}, {num_layers}), got {layer}")
    w = weights["cross"][layer][0]  # (H, T, S)
    if head is None:
        return w.mean(0)  # (T, S)
    if not 0 <= head < num_heads:
        raise ValueError(f"head must be in [0, {num_heads}), got {head}")
    return w[head]  # (T, S)


def alignment_table(weights: torch.Tensor, out_tokens: list[str], src_tokens: list[str]) -> str:
    """A text table: one row per source token, one column per output token, weights x100
    (``..`` below 5), so the alignment reads like the heatmap turned on its side."""
    if weights.shape != (len(out_tokens), len(src_tokens)):
        raise ValueError(f"weights must be (T, S) = ({len(out_tokens)}, {len(src_tokens)}), "
                         f"got {tuple(weights.shape)}")
    left = max(len(s) for s in src_tokens)
    widths = [max(3, len(t)) for t in out_tokens]
    lines = [" " * left + " | " + " ".join(t.rjust(w) for t, w in zip(out_tokens, widths))]
    lines.append("-" * len(lines[0]))
    for j, s in enumerate(src_tokens):
        cells = []
        for i, w in enumerate(widths):
            value = round(100 * float(weights[i, j]))
            cells.append((str(value) if value >= 5 else "..").rjust(w))
        lines.append(s.rjust(left) + " | " + " ".join(cells))
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m transformer_lab.translate",
        description="Translate text with a checkpoint written by transformer_lab.train (greedy or beam search, "
        "Section 6.1); optionally print the cross-attention alignment.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("text", nargs="+", help="source text(s) to translate, one per argument")
    p.add_argument("--checkpoint", required=True, help="a run's output dir, its checkpoints/ dir, or a .pt file")
    p.add_argument("--latest", action="store_true", help="use the latest step checkpoint, not averaged.pt")
    p.add_argument("--beam-size", type=int, default=1, help="1 = greedy; the paper uses 4")
    p.add_argument("--length-penalty", type=float, default=0.6, help="GNMT alpha for beam search")
    p.add_argument("--show-alignment", action="store_true", help="print the cross-attention weights")
    p.add_argument("--layer", type=int, default=-1, help="decoder layer for --show-alignment")
    p.add_argument("--head", type=int, help="one head for --show-alignment (default: the mean of all heads)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.beam_size < 1:
        print(f"error: --beam-size must be a positive int, got {args.beam_size}", file=sys.stderr)
        return 2
    try:
        model, src_vocab, tgt_vocab = load_model(args.checkpoint, prefer_averaged=not args.latest)
    except CheckpointError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    warnings.simplefilter("always")
    warnings.formatwarning = lambda message, category, *rest: f"warning: {message}\n"
    for text in args.text:
        try:
            ids, src = translate(model, src_vocab, tgt_vocab, text, args.beam_size, args.length_penalty)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(tgt_vocab.decode(ids))
        if args.show_alignment:
            try:
                weights = cross_attention(model, src, ids, args.layer, args.head)
            except ValueError as e:
                print(f"error: {e}", file=sys.stderr)
                return 2
            out_tokens = [tgt_vocab.itos[i] for i in ids[1:]]
            src_tokens = [src_vocab.itos[i] for i in src[0].tolist()]
            which = f"layer {args.layer}, " + (f"head {args.head}" if args.head is not None else "mean of heads")
            print(f"cross-attention ({which}), weights x100; rows: source, columns: output")
            print(alignment_table(weights, out_tokens, src_tokens))
    return 0


if __name__ == "__main__":
    sys.exit(main())
