"""Translate with a trained checkpoint: ``python -m transformer_lab.cli.translate --help``.

    python -m transformer_lab.cli.translate --checkpoint runs/dates "the fourth of july nineteen ninety-nine"
    python -m transformer_lab.cli.translate --checkpoint runs/dates --beam-size 4 --show-alignment "..."

Greedy decoding or beam search with GNMT's length penalty (Section 6.1 of Vaswani et al.,
2017: beam 4, alpha 0.6, at most input length + 50 tokens). ``--show-alignment`` prints the
encoder-decoder ("cross") attention weights of the output (Section 3.2.3) as a text table,
averaged over the heads of the last layer unless ``--layer``/``--head`` pick one. The
text is read as the deck's explorer reads it (``normalise_text`` with the checkpoint's
source vocabulary): lower-cased, a punctuation mark the vocabulary has split off as a
word, one it lacks dropped (with a note on stderr naming it). This
module parses the command line into :class:`TranslateOptions` and calls the library's
:func:`load_model`, :func:`translate` and :func:`cross_attention`. Bad input, an invalid
checkpoint or a model whose logits are not finite: a one-line message and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
import unicodedata
import warnings
from dataclasses import dataclass

import torch

from .. import checks
from ..checkpoint import CheckpointError
from ..data import Vocabulary, normalise_text
from ..inference import check_layer_head, cross_attention, load_model, translate
from ..model import Transformer


@dataclass(frozen=True)
class TranslateOptions:
    """What the command line asks for; checked on creation."""

    texts: tuple[str, ...]
    checkpoint: str
    latest: bool = False
    beam_size: int = 1
    length_penalty: float = 0.6
    show_alignment: bool = False
    layer: int = -1
    head: int | None = None

    def __post_init__(self):
        for i, text in enumerate(self.texts):
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"texts[{i}] must hold something to translate, got {text!r}")
        checks.positive_int("beam_size", self.beam_size)
        checks.finite_number("length_penalty", self.length_penalty, minimum=0.0)


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
        prog="python -m transformer_lab.cli.translate",
        description="Translate text with a checkpoint written by transformer_lab.cli.train (greedy or beam "
        "search, Section 6.1); optionally print the cross-attention alignment.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("texts", nargs="+", metavar="text", help="source text(s) to translate, one per argument (lower-cased; punctuation "
                   "the vocabulary lacks is dropped)")
    p.add_argument("--checkpoint", required=True, help="a run's output dir, its checkpoints/ dir, or a .pt file")
    p.add_argument("--latest", action="store_true", help="use the latest step checkpoint, not averaged.pt")
    p.add_argument("--beam-size", type=int, default=1, help="1 = greedy; the paper uses 4")
    p.add_argument("--length-penalty", type=float, default=0.6, help="GNMT alpha for beam search")
    p.add_argument("--show-alignment", action="store_true", help="print the cross-attention weights")
    p.add_argument("--layer", type=int, default=-1, help="decoder layer for --show-alignment")
    p.add_argument("--head", type=int, help="one head for --show-alignment (default: the mean of all heads)")
    return p


def show_alignment(model: Transformer, src_vocab: Vocabulary, tgt_vocab: Vocabulary, src: torch.Tensor,
                   ids: list[int], options: TranslateOptions) -> None:
    weights = cross_attention(model, src, ids, options.layer, options.head)  # (T, S)
    out_tokens = [tgt_vocab.itos[i] for i in ids[1:]]
    src_tokens = [src_vocab.itos[i] for i in src[0].tolist()]
    which = f"layer {options.layer}, " + (f"head {options.head}" if options.head is not None else "mean of heads")
    print(f"cross-attention ({which}), weights x100; rows: source, columns: output")
    print(alignment_table(weights, out_tokens, src_tokens))


def main(argv: list[str] | None = None) -> int:
    warnings.simplefilter("always")
    warnings.formatwarning = lambda message, category, *rest: f"warning: {message}\n"
    try:
        options = TranslateOptions(**{k: tuple(v) if k == "texts" else v
                                      for k, v in vars(build_parser().parse_args(argv)).items()})
        model, src_vocab, tgt_vocab = load_model(options.checkpoint, prefer_averaged=not options.latest)
        check_layer_head(model, options.layer, options.head)  # before any decoding
        for text in options.texts:
            source = normalise_text(text, src_vocab)
            dropped = sorted({c for c in text.lower() if unicodedata.category(c).startswith("P")} - set(source))
            if dropped:
                print(f"note: punctuation the {src_vocab.tokenize} vocabulary lacks is dropped: "
                      f"{' '.join(dropped)}", file=sys.stderr)
            ids, src = translate(model, src_vocab, tgt_vocab, source, options.beam_size, options.length_penalty)
            print(tgt_vocab.decode(ids))
            if options.show_alignment:
                show_alignment(model, src_vocab, tgt_vocab, src, ids, options)
    except (ValueError, TypeError, CheckpointError, FloatingPointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
