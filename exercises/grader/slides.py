"""The slides the grader points at, in one table: a key, the chapter file under
slides/chapters/ and the slide's title as written after its ``## `` (attributes such as
``{.smaller}`` left out). When the deck changes, this table is the one place to update;
tests/test_exercises_slides.py fails for a title or file that no longer exists."""

from __future__ import annotations

SLIDES: dict[str, tuple[str, str]] = {
    "embedding": ("03-embeddings.qmd", "A lookup, scaled"),
    "positions": ("04-positions.qmd", "Sines and cosines"),
    "attention": ("06-sdpa.qmd", "Equation (1)"),
    "attention-code": ("06-sdpa.qmd", "Equation (1) in the package's code"),
    "why-sqrt": ("05-attention-lookup.qmd", "Why divide by $\\sqrt{d_k}$"),
    "masks": ("07-masks.qmd", "Padding and causal masks"),
    "causal": ("07-masks.qmd", "The causal mask and the shifted target"),
    "empty-row": ("07-masks.qmd", "A query that may see nothing"),
    "heads": ("08-multi-head.qmd", "Split into heads, and back"),
    "multi-head": ("08-multi-head.qmd", "Equation"),
    "feed-forward": ("09-feed-forward.qmd", "Equation (2)"),
    "residual": ("10-residual.qmd", "Add & Norm"),
    "encoder": ("11-encoder.qmd", "An encoder layer"),
    "decoder": ("12-decoder.qmd", "A decoder layer"),
    "causality": ("12-decoder.qmd", "Causality, checked"),
    "three-uses": ("08-multi-head.qmd", "Three uses in the model (Section 3.2.3)"),
    "learning-rate": ("14-training.qmd", "The learning-rate schedule (Section 5.3)"),
    "label-smoothing": ("14-training.qmd", "Label smoothing (Section 5.4)"),
    "greedy": ("15-decoding.qmd", "Greedy decoding, step by step"),
    "kv-cache": ("15-decoding.qmd", "The key/value cache"),
    "beam": ("15-decoding.qmd", "Greedy and beam search"),
    "beam-tree": ("15-decoding.qmd", "A beam tree (beam size 3)"),
    "mistakes-scale-mask": ("16-mistakes.qmd", "Scaling by $d_k$, masking after the softmax"),
    "mistakes-heads-sincos": ("16-mistakes.qmd", "Heads on the wrong axis, sin and cos swapped"),
    "mistakes-mask-residual": ("16-mistakes.qmd", "Off-by-one mask, missing residual"),
    "mistakes-more": ("16-mistakes.qmd", "Two more the tests catch"),
}


def slide_reference(key: str) -> str:
    """``slides/chapters/06-sdpa.qmd, "Equation (1)"``: where a learner reads about it."""
    chapter, title = SLIDES[key]
    return f'slides/chapters/{chapter}, "{title}"'
