"""The claims of the deck's definition slides (chapters 03, 06, 07, 10 and 14a), computed
as the slides compute them. Where a slide's example is data (the one-head matrices, the
BLEU sentence pair), it is read from the slide's source, so the test checks that example."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sacrebleu
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import transformer_lab as tl
from transformer_lab import teaching as tt
from transformer_lab.data import BOS_ID, EOS_ID, PAD_ID
from transformer_lab.data.batching import Example, collate

CHAPTERS = Path(__file__).resolve().parents[1] / "slides" / "chapters"


def slide_assignments(chapter: str, names: list[str]) -> dict:
    """Run the lines of ``chapter`` that assign ``names`` (``x = torch.tensor(...)``)."""
    text = (CHAPTERS / chapter).read_text()
    namespace = {"torch": torch}
    for name in names:
        line = re.search(rf"^{name} = .*$", text, flags=re.M)
        assert line, f"{chapter} no longer assigns {name}"
        exec(line.group(0), namespace)  # a literal from our own slide source
    return namespace


# --------------------------------------------------------------------------- chapter 03


@pytest.fixture(scope="module")
def bpe():
    return tt.learn_bpe(tt.corpus.TEXT, num_merges=1000)


def test_bpe_is_learned_on_eight_paragraphs_and_the_example_word_is_not_in_them(bpe):
    assert len([p for p in tt.corpus.TEXT.split("\n\n") if p.strip()]) == 8
    assert "untranslated" not in tt.pre_tokenize(tt.corpus.TEXT)


def test_bpe_first_merges_end_words_and_join_t_and_h(bpe):
    assert all(b == "</w>" for _, b in bpe.merges[:2])
    assert ("t", "h") in bpe.merges[:3]


def test_bpe_finds_the_stem_of_a_word_it_never_saw(bpe):
    assert "translat" in bpe.segment("untranslated", 100)
    assert len(bpe.segment("untranslated", 400)) < len(bpe.segment("untranslated", 100)) < 13


def test_vocabulary_size_trades_against_sequence_length(bpe):
    merges = [0, 10, 25, 50, 100, 200, 300, 400, len(bpe.merges)]
    train = tt.tokens_per_sentence(bpe, tt.corpus.TEXT, merges)
    held_out = tt.tokens_per_sentence(bpe, tt.corpus.HELD_OUT, merges)
    words = len(tt.pre_tokenize(tt.corpus.TEXT)) / len(tt.split_sentences(tt.corpus.TEXT))
    held_out_words = len(tt.pre_tokenize(tt.corpus.HELD_OUT)) / len(tt.split_sentences(tt.corpus.HELD_OUT))
    assert train == sorted(train, reverse=True) and held_out == sorted(held_out, reverse=True)
    assert 85 <= train[0] <= 95  # "about 90" with characters alone
    assert train[-1] == pytest.approx(words) and 16 <= words <= 18  # "about 17, one per word"
    assert held_out[-1] > held_out_words  # unseen words stay split


def test_scaled_embeddings_and_sinusoids_are_of_the_same_order_not_equal():
    emb = tl.TokenEmbedding(vocab_size=1000, d_model=512)
    x = emb(torch.arange(1000)[None])[0].detach()  # (1000, 512)
    pe = tl.sinusoidal_positional_encoding(1000, 512)  # (1000, 512)
    unscaled = x / 512**0.5
    assert x.pow(2).mean().item() == pytest.approx(1.0, abs=0.02)
    assert pe.pow(2).mean().item() == pytest.approx(0.5, abs=1e-6)  # sin^2 + cos^2 = 1 per pair
    assert round(pe.std().item(), 3) == 0.669  # below sqrt(1/2): the mean is not zero
    assert round(unscaled.std().item(), 3) == 0.044
    assert round((pe.std() / unscaled.std()).item()) == 15  # "about 15 times smaller"


# --------------------------------------------------------------------------- chapter 06


def test_one_head_by_hand_gives_the_numbers_the_notes_describe():
    m = slide_assignments("01-attention.qmd", ["x", "w_q", "w_k", "w_v"])
    head = tt.one_head_steps(m["x"], m["w_q"], m["w_k"], m["w_v"])
    assert head.q.tolist() == [[2, 0], [0, 3], [2, 1]]  # "one plus one and zero": small integers
    assert head.q.shape == (3, 2) and head.v.shape == (3, 2)
    second = head.weights[1]
    assert second[0] == pytest.approx(0.5, abs=0.01) and second[2] == pytest.approx(0.5, abs=0.01)
    assert second[1] < 0.01  # "almost none to itself"
    torch.testing.assert_close(head.output, tl.scaled_dot_product_attention(head.q, head.k, head.v))


# --------------------------------------------------------------------------- chapter 07


def test_left_padding_under_the_causal_mask_empties_the_first_rows():
    tokens = torch.tensor([[0, 0, 5, 8, 3]])
    mask = (tl.padding_mask(tokens, pad_id=0) & tl.causal_mask(5))[0, 0]  # (5, 5)
    assert mask.any(-1).tolist() == [False, False, True, True, True]
    q, k = torch.randn(5, 4), torch.randn(5, 4)
    naive = torch.softmax((q @ k.T / 2).masked_fill(~mask, float("-inf")), dim=-1)
    ours = tl.attention_weights(q, k, mask)
    assert naive[0].isnan().all() and naive[1].isnan().all()
    assert (ours[:2] == 0).all() and ours[2:].sum(-1).allclose(torch.ones(3))


def test_a_sequence_of_only_padding_empties_every_row():
    mask = tl.padding_mask(torch.zeros(1, 4, dtype=torch.long), pad_id=0).expand(1, 1, 4, 4)
    assert not mask.any()


@settings(max_examples=40, deadline=None)
@given(lengths=st.lists(st.tuples(st.integers(1, 6), st.integers(0, 6)), min_size=1, max_size=5))
def test_right_padded_batches_never_empty_a_row(lengths):
    examples = [Example(torch.full((s,), 7).index_fill(0, torch.tensor([s - 1]), EOS_ID),
                        torch.tensor([BOS_ID] + [9] * t + [EOS_ID]), i) for i, (s, t) in enumerate(lengths)]
    batch = collate(examples)
    T = batch.tgt_in.size(1)
    assert tl.padding_mask(batch.src, PAD_ID).any(-1).all()  # every query sees a real key
    assert (tl.padding_mask(batch.tgt_in, PAD_ID) & tl.causal_mask(T)).any(-1).all()  # <bos> is key 0


def test_the_causal_quote_is_cited_to_section_3_1():
    text = (CHAPTERS / "02-masks-heads.qmd").read_text()
    quote = "known outputs at positions less than $i$.\""
    assert quote in text
    assert text.split(quote, 1)[1].lstrip().startswith("(Section 3.1")
    assert "## The causal mask and the shifted target (Section 3.2.3)" not in text


def test_every_quote_of_the_offset_target_cites_section_3_1():
    """"offset by one position" is in the decoder paragraph of Section 3.1, wherever quoted."""
    import re

    for path in sorted(CHAPTERS.glob("*.qmd")):
        for match in re.finditer(r"offset by one position", path.read_text()):
            after = path.read_text()[match.end(): match.end() + 400]
            cited = re.search(r"Section (\d(?:\.\d)*)", after)
            assert cited and cited.group(1) == "3.1", f"{path.name}: cites {cited and cited.group(0)}"


# --------------------------------------------------------------------------- chapter 10


def test_layer_norm_slide_parity_with_nn_layer_norm():
    x = torch.randn(2, 7, 12)  # (B, T, D), as on the slide
    ln = torch.nn.LayerNorm(12)
    torch.nn.init.normal_(ln.weight)
    torch.nn.init.normal_(ln.bias)
    with torch.no_grad():
        diff = (tt.layer_norm(x, ln.weight, ln.bias, eps=ln.eps) - ln(x)).abs().max().item()
    assert diff < 1e-5


def test_the_model_normalises_with_nn_layer_norm():
    model = tl.Transformer(tl.TransformerConfig(20, 20, d_model=12, num_heads=3, d_ff=16, num_layers=1))
    norms = [m for m in model.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert norms and all(n.normalized_shape == (12,) for n in norms)


# --------------------------------------------------------------------------- chapter 14a


def test_bleu_slide_example_matches_sacrebleu():
    m = slide_assignments("a6-training.qmd", ["hyp, ref"])   # BLEU, defined (appendix)
    hyp, ref = m["hyp"], m["ref"]
    ours = tt.sentence_bleu(hyp, ref)
    theirs = sacrebleu.corpus_bleu([hyp], [[ref]], smooth_method="none", tokenize="none")
    assert ours.score == pytest.approx(theirs.score, abs=1e-9)
    assert ours.hyp_len < ours.ref_len and ours.brevity_penalty < 1  # the penalty is on show
    assert ours.matches[0] < ours.totals[0]  # and so is clipping
    assert "cat" in hyp.split() and hyp.split().count("cat") > ref.split().count("cat")
