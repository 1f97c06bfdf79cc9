"""Section 6.1: greedy and beam search (beam 4, length penalty alpha = 0.6), with a cache."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import transformer_lab as tl

BOS, EOS, PAD = 1, 2, 0


def random_model(seed=0, **overrides):
    torch.manual_seed(seed)
    config = tl.TransformerConfig(src_vocab_size=23, tgt_vocab_size=19, d_model=12, num_heads=3,
                                  d_ff=20, num_layers=2, max_len=64, **overrides)
    return tl.Transformer(config).eval()


def source(seed=0):
    src = torch.randint(4, 23, (3, 7), generator=torch.Generator().manual_seed(seed))
    src[1, -3:] = PAD
    return src


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 1000))
def test_cached_decoding_equals_recomputation(seed):
    model, src = random_model(seed), source(seed)
    cached = tl.greedy_decode(model, src, max_len=12, bos_id=BOS, eos_id=EOS, use_cache=True)
    recomputed = tl.greedy_decode(model, src, max_len=12, bos_id=BOS, eos_id=EOS, use_cache=False)
    assert torch.equal(cached, recomputed)


def test_cached_decoder_logits_equal_the_full_forward_pass():
    model, src = random_model(), source()
    tgt = torch.randint(3, 19, (3, 6))
    full = model(src, tgt)
    memory, cache = model.encode(src), model.new_cache()
    steps = [model.decode(tgt[:, t : t + 1], memory, model.src_mask(src), cache=cache) for t in range(6)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full)
    assert cache.length == 6  # read from the self-attention caches, which grew one row per step


def test_a_cache_fed_a_whole_prefix_then_single_tokens_equals_the_full_forward_pass():
    model, src = random_model(), source()
    tgt = torch.randint(3, 19, (3, 6))
    memory, cache = model.encode(src), model.new_cache()
    prefix = model.decode(tgt[:, :4], memory, model.src_mask(src), cache=cache)  # (3, 4, V)
    assert cache.length == 4
    rest = [model.decode(tgt[:, t : t + 1], memory, model.src_mask(src), cache=cache) for t in (4, 5)]
    torch.testing.assert_close(torch.cat([prefix, *rest], dim=1), model(src, tgt))


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 1000))
def test_beam_size_one_is_greedy(seed):
    model, src = random_model(seed), source(seed)
    greedy = tl.greedy_decode(model, src, max_len=10, bos_id=BOS, eos_id=EOS)
    beam = tl.beam_search(model, src, beam_size=1, max_len=10, bos_id=BOS, eos_id=EOS)
    assert torch.equal(beam, greedy)


class BigramModel(tl.Transformer):
    """A model whose next-token distribution depends only on the last token: a fixed
    table, so the best hypotheses can be worked out by hand."""

    def __init__(self, table):
        vocab = table.size(0)
        super().__init__(tl.TransformerConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, d_model=4,
                                              num_heads=1, d_ff=4, num_layers=1))
        self.log_table = table.log()

    def encode(self, src, src_mask=None):
        return torch.zeros(src.size(0), src.size(1), 4)

    def decode(self, tgt, memory, src_mask=None, tgt_mask=None, cache=None):
        return self.log_table[tgt]  # (B, T, V): log-probabilities are valid logits


A, Bt, C = 3, 4, 5  # three ordinary tokens; 0 pad, 1 bos, 2 eos


def bigram_table():
    p = torch.full((6, 6), 1e-6)
    p[BOS, [A, Bt, EOS]] = torch.tensor([0.5, 0.4, 0.1])  # greedy takes A ...
    p[A, [A, Bt, C, EOS]] = torch.tensor([0.3, 0.25, 0.2, 0.25])  # ... then keeps taking A
    p[Bt, EOS] = 0.9  # B then EOS: 0.4 * 0.9 = 0.36
    p[Bt, C] = 0.1
    p[C, EOS] = 1.0
    return p / p.sum(-1, keepdim=True)


def test_beam_search_finds_the_better_hypothesis_that_greedy_misses():
    model, src = BigramModel(bigram_table()), torch.full((1, 3), 3)
    greedy = tl.greedy_decode(model, src, max_len=6, bos_id=BOS, eos_id=EOS)
    beam = tl.beam_search(model, src, beam_size=2, max_len=6, bos_id=BOS, eos_id=EOS)
    assert greedy[0, :3].tolist() == [BOS, A, A]
    assert beam[0].tolist() == [BOS, Bt, EOS]


def test_beam_search_does_not_stop_while_a_better_prefix_is_live():
    # Weak beams end early ("B EOS", "B G EOS") while the likely "A C D EOS" is still
    # growing. Stopping at the first k finished returned "B EOS", far worse than greedy's
    # answer (a search error a reviewer met on the dates model: beam 4 worse than greedy).
    D, G = 6, 7
    p = torch.full((8, 8), 1e-6)
    p[BOS, [A, Bt, EOS]] = torch.tensor([0.9, 0.05, 0.04])
    p[A, C], p[C, D], p[D, EOS] = 0.99, 0.99, 0.99
    p[Bt, [EOS, G]] = torch.tensor([0.9, 0.05])
    p[G, EOS] = 0.99
    model, src = BigramModel(p / p.sum(-1, keepdim=True)), torch.full((1, 3), 3)
    greedy = tl.greedy_decode(model, src, max_len=8, bos_id=BOS, eos_id=EOS)
    beam = tl.beam_search(model, src, beam_size=2, max_len=8, bos_id=BOS, eos_id=EOS)
    assert greedy[0].tolist() == [BOS, A, C, D, EOS]
    assert beam[0].tolist() == [BOS, A, C, D, EOS]


def test_length_penalty_trades_probability_for_length():
    p = torch.full((6, 6), 1e-6)
    p[BOS, [A, Bt]] = torch.tensor([0.52, 0.48])
    p[A, EOS] = 1.0  # "A EOS": probability 0.52, 2 tokens
    p[Bt, C] = 1.0
    p[C, [C, EOS]] = torch.tensor([0.05, 0.95])  # "B C EOS": 0.456, 3 tokens
    model, src = BigramModel(p / p.sum(-1, keepdim=True)), torch.full((1, 3), 3)
    short = tl.beam_search(model, src, 2, 8, BOS, EOS, length_penalty=0.0)
    long = tl.beam_search(model, src, 2, 8, BOS, EOS, length_penalty=2.0)
    assert short[0].tolist() == [BOS, A, EOS]
    assert long[0].tolist() == [BOS, Bt, C, EOS]
    # log(0.52) > log(0.456), but log(0.52) / lp(2) < log(0.456) / lp(3) when alpha = 2:
    assert math.log(0.52) / tl.gnmt_length_penalty(2, 2.0) < math.log(0.456) / tl.gnmt_length_penalty(3, 2.0)


def test_gnmt_length_penalty():
    assert tl.gnmt_length_penalty(1, 0.6) == pytest.approx(1.0)
    assert tl.gnmt_length_penalty(7, 0.6) == pytest.approx(2.0**0.6)
    assert tl.gnmt_length_penalty(100, 0.0) == 1.0


@pytest.mark.parametrize("decode", ["greedy", "beam"])
def test_output_layout_bos_first_pad_after_eos_and_bounded_length(decode):
    model, src = random_model(3), source(3)
    if decode == "greedy":
        out = tl.greedy_decode(model, src, max_len=9, bos_id=BOS, eos_id=EOS)
    else:
        out = tl.beam_search(model, src, beam_size=4, max_len=9, bos_id=BOS, eos_id=EOS)
    assert out.dtype == torch.long and out.size(0) == 3 and out.size(1) <= 9
    assert torch.all(out[:, 0] == BOS)
    for row in out.tolist():
        if EOS in row:
            assert all(t == PAD for t in row[row.index(EOS) + 1 :])


def test_decoding_stops_early_when_every_row_has_ended():
    model = BigramModel(bigram_table())
    out = tl.greedy_decode(model, torch.full((2, 3), 3), max_len=50, bos_id=BOS, eos_id=A)
    assert out.tolist() == [[BOS, A]] * 2


def test_bad_arguments_are_named():
    model, src = random_model(), source()
    with pytest.raises(ValueError, match="beam_size must be a positive int"):
        tl.beam_search(model, src, 0, 5, BOS, EOS)
    with pytest.raises(ValueError, match=r"eos_id must be in \[0, 19\)"):
        tl.greedy_decode(model, src, 5, BOS, 40)
    with pytest.raises(TypeError, match="model must be a transformer_lab.Transformer"):
        tl.greedy_decode(torch.nn.Linear(2, 2), src, 5, BOS, EOS)


@pytest.mark.cuda
def test_decoding_on_cuda_matches_cpu():
    model, src = random_model(), source()
    expected = tl.beam_search(model, src, 4, 10, BOS, EOS)
    assert torch.equal(tl.beam_search(model.cuda(), src.cuda(), 4, 10, BOS, EOS).cpu(), expected)
