"""The slides the grader points at, in one table: a key, the chapter file under
slides/chapters/ and the slide's title as written after its ``## `` (attributes such as
``{.smaller}`` left out). When the deck changes, this table is the one place to update;
tests/test_exercises_slides.py fails for a title or file that no longer exists."""

from __future__ import annotations

SLIDES: dict[str, tuple[str, str]] = {
    "attention": ("01-attention.qmd", "Scaled dot-product attention: equation (1)"),
    "attention-code": ("a1-attention.qmd", "Equation (1) in the package's code"),
    "why-sqrt": ("01-attention.qmd", "Why divide by $\\sqrt{d_k}$"),
    "masks": ("02-masks-heads.qmd", "Padding and causal masks"),
    "causal": ("02-masks-heads.qmd", "The causal mask and the shifted target"),
    "empty-row": ("02-masks-heads.qmd", "A query that may see nothing: $-\\infty$ gives NaN"),
    "heads": ("02-masks-heads.qmd", "Multi-head attention: $h$ smaller heads"),
    "multi-head": ("02-masks-heads.qmd", "Multi-head attention: $h$ smaller heads"),
    "embedding": ("03-inputs.qmd", "A lookup, scaled by $\\sqrt{d_\\text{model}}$"),
    "positions": ("03-inputs.qmd", "Positions: sines and cosines of many wavelengths"),
    "feed-forward": ("04-layers.qmd", "Position-wise feed-forward network: equation (2)"),
    "residual": ("04-layers.qmd", "Residual connection and layer normalisation: Add & Norm"),
    "encoder": ("04-layers.qmd", "Encoder and decoder layers, with their shapes"),
    "decoder": ("04-layers.qmd", "Encoder and decoder layers, with their shapes"),
    "causality": ("04-layers.qmd", "Causality, checked: change one target token"),
    "three-uses": ("04-layers.qmd", "One attention function, three uses, separate weights"),
    "learning-rate": ("06-training.qmd", "The learning-rate schedule: equation (3)"),
    "label-smoothing": ("06-training.qmd", "Label smoothing: a softer target (Section 5.4)"),
    "greedy": ("07-decoding.qmd", "Greedy search and beam search with a length penalty"),
    "kv-cache": ("07-decoding.qmd", "The key/value cache: one new token per step"),
    "beam": ("07-decoding.qmd", "Greedy search and beam search with a length penalty"),
    "beam-tree": ("07-decoding.qmd", "A beam tree on a date (beam size 3)"),
    "mistakes-scale-mask": ("a8-mistakes.qmd", "Mistakes: scaling by $d_k$, masking after the softmax"),
    "mistakes-heads-sincos": ("a8-mistakes.qmd", "Mistakes: heads on the wrong axis, sin and cos swapped"),
    "mistakes-mask-residual": ("a8-mistakes.qmd", "Mistakes: an off-by-one mask, a missing residual"),
    "mistakes-more": ("a8-mistakes.qmd", "Mistakes: two more the tests catch"),
}


def slide_reference(key: str) -> str:
    """``slides/chapters/01-attention.qmd, "Scaled dot-product attention: equation (1)"``: where a learner reads about it."""
    chapter, title = SLIDES[key]
    return f'slides/chapters/{chapter}, "{title}"'
