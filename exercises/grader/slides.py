"""The slides the grader points at, in one table: a key, the chapter file under
slides/chapters/ and the slide's title as written after its ``## `` (attributes such as
``{.smaller}`` left out). When the deck changes, this table is the one place to update;
tests/test_exercises_slides.py fails for a title or file that no longer exists."""

from __future__ import annotations

SLIDES: dict[str, tuple[str, str]] = {
    "attention": ("01-attention.qmd", "Scaled dot-product attention: equation (1)"),
    "attention-code": ("a1-attention.qmd", "Equation (1) in the package's code"),
    "why-sqrt": ("01-attention.qmd", "Why divide by $\\sqrt{d_k}$"),
    "masks": ("02-masks-heads.qmd", "Masks: padding, causal, and the shifted target"),
    "causal": ("02-masks-heads.qmd", "Masks: padding, causal, and the shifted target"),
    "empty-row": ("a2-heads.qmd", "A query that may see nothing"),
    "heads": ("02-masks-heads.qmd", "Multi-head attention: $h$ smaller heads"),
    "multi-head": ("02-masks-heads.qmd", "Multi-head attention: $h$ smaller heads"),
    "embedding": ("03-inputs.qmd", "Tokens, then a lookup scaled by $\\sqrt{d_\\text{model}}$"),
    "positions": ("03-inputs.qmd", "Positions: sines and cosines, and why"),
    "feed-forward": ("04-layers.qmd", "Position-wise feed-forward network: equation (2)"),
    "residual": ("04-layers.qmd", "Add & Norm: a residual connection, then LayerNorm"),
    "encoder": ("04-layers.qmd", "Encoder and decoder layers, with their shapes"),
    "decoder": ("04-layers.qmd", "Encoder and decoder layers, with their shapes"),
    "causality": ("a2-heads.qmd", "Change one decoder input token: which outputs move?"),
    "three-uses": ("04-layers.qmd", "One attention function, three uses, separate weights"),
    "learning-rate": ("06-training.qmd", "The learning-rate schedule: equation (3)"),
    "label-smoothing": ("06-training.qmd", "Label smoothing: a softer target (Section 5.4)"),
    "greedy": ("07-decoding.qmd", "Greedy and beam search, on a date"),
    "kv-cache": ("a7-decoding.qmd", "The key/value cache: one new token per step"),
    "beam": ("07-decoding.qmd", "Greedy and beam search, on a date"),
    "beam-tree": ("07-decoding.qmd", "Greedy and beam search, on a date"),
    "mistakes-scale-mask": ("a8-mistakes.qmd", "Mistakes: scaling by $d_k$, masking too late"),
    "mistakes-heads-sincos": ("a8-mistakes.qmd", "Mistakes: heads mixed up, sin/cos swapped"),
    "mistakes-mask-residual": ("a8-mistakes.qmd", "Mistakes: off-by-one mask, missing residual"),
    "mistakes-more": ("a8-mistakes.qmd", "Mistakes: two more the tests catch"),
    # The reimplementation bugs of the mistakes gallery (issue 30), each on the gallery slide
    # that computes its symptom and names the test that catches it.
    "gallery-mask-polarity": ("a8-mistakes.qmd", "Mistakes: mask polarity, unshifted target"),
    "gallery-padding-in-loss": ("a8-mistakes.qmd", "Mistakes: padded loss, schedule at step 0"),
    "gallery-schedule-at-step-0": ("a8-mistakes.qmd", "Mistakes: padded loss, schedule at step 0"),
    "gallery-positions-with-cache": ("a8-mistakes.qmd", "Mistakes: cached positions, no final norm"),
    "gallery-pre-ln-final-norm": ("a8-mistakes.qmd", "Mistakes: cached positions, no final norm"),
    "gallery-fp16-mask": ("a8-mistakes.qmd", "Mistakes: −1e9 in float16, eval() forgotten"),
    "gallery-eval-mode": ("a8-mistakes.qmd", "Mistakes: −1e9 in float16, eval() forgotten"),
    # Exercises 15 and 16 (issue 32) go past the paper: their mistakes point at the appendix's
    # deep dives on rotary positions and grouped-query attention (the "Since 2017" slide names
    # the exercises and links to both).
    "rotary": ("a3-inputs.qmd", "Rotary positions: the rotation, on q and k"),  # pairs, angles, positions
    "rotary-qk": ("a3-inputs.qmd", "Rotary positions: the rotation, on q and k"),  # what is turned: each head's q, k
    "rotary-offset": ("a3-inputs.qmd", "Rotary positions: the rotation, on q and k"),  # the offset with a cache
    "grouped-query": ("a7-decoding.qmd", "Grouped-query attention: a smaller cache"),  # groups, projections
    "grouped-query-cache": ("a7-decoding.qmd", "Grouped-query attention: a smaller cache"),  # G heads cached
}


def slide_reference(key: str) -> str:
    """``slides/chapters/01-attention.qmd, "Scaled dot-product attention: equation (1)"``: where a learner reads about it."""
    chapter, title = SLIDES[key]
    return f'slides/chapters/{chapter}, "{title}"'
