"""The API under bad input: each mistake is a ValueError or TypeError naming the argument,
what was expected and what arrived; and decoding never hides non-finite logits.

Sizes are deliberately unequal (B=2, S=7, T=5, D=12, H=3).
"""

import math
import re

import pytest
import torch

import transformer_lab as tl
from transformer_lab.data.batching import Example

B, S, T, D, H = 2, 7, 5, 12, 3
SRC_V, TGT_V = 11, 13


@pytest.fixture
def model():
    return tl.Transformer(tl.TransformerConfig(src_vocab_size=SRC_V, tgt_vocab_size=TGT_V, d_model=D, num_heads=H,
                                               d_ff=20, num_layers=1, max_len=64)).eval()


@pytest.fixture
def src():
    return torch.randint(3, SRC_V, (B, S))


@pytest.fixture
def tgt():
    return torch.randint(3, TGT_V, (B, T))


def test_a_negative_or_zero_clip_norm_is_refused_by_train_step_and_run_config():
    model = tl.Transformer(tl.TransformerConfig.tiny(20, d_model=16, num_heads=2, d_ff=32, num_layers=1))
    batch = tl.collate([Example(torch.tensor([5, 6, 2]), torch.tensor([1, 7, 8, 2]), 0)])
    for bad in (-1.0, 0.0, math.nan):
        optimizer = tl.make_optimizer(model)
        before = [p.detach().clone() for p in model.parameters()]
        with pytest.raises(ValueError, match=f"clip_norm must be positive and finite, got {bad}"):
            tl.train_step(model, batch, tl.LabelSmoothingLoss(0.1), optimizer, clip_norm=bad)
        assert all(torch.equal(a, p) for a, p in zip(before, model.parameters()))  # no update happened
        with pytest.raises(ValueError, match="clip_norm must be positive and finite"):
            tl.RunConfig(clip_norm=bad)


@pytest.mark.parametrize("side", ["src", "tgt"])
def test_out_of_range_ids_name_src_or_tgt(model, src, tgt, side):
    vocab = SRC_V if side == "src" else TGT_V
    args = {"src": src, "tgt": tgt}
    args[side] = args[side].clone()
    args[side][1, 2] = vocab
    with pytest.raises(ValueError, match=rf"^{side} must hold ids in \[0, {vocab}\) for vocab_size={vocab}, "
                                         rf"got id {vocab}$"):
        model(args["src"], args["tgt"])


@pytest.mark.parametrize("shape", [(0, S), (B, 0)])
@pytest.mark.parametrize("call", ["forward", "encode", "greedy_decode", "beam_search", "generate"])
def test_empty_batches_and_zero_length_sources_are_a_clear_value_error(model, tgt, shape, call):
    empty = torch.zeros(shape, dtype=torch.long)
    run = {
        "forward": lambda: model(empty, tgt),
        "encode": lambda: model.encode(empty),
        "greedy_decode": lambda: tl.greedy_decode(model, empty, 9, 1, 2),
        "beam_search": lambda: tl.beam_search(model, empty, 2, 9, 1, 2),
        "generate": lambda: tl.generate(model, empty, 1, 2),
    }[call]
    with pytest.raises(ValueError, match=re.escape(f"src must hold at least one sequence of at least one token "
                                                   f"(B >= 1, L >= 1), got shape {shape}")):
        run()


def test_a_zero_length_target_is_a_clear_value_error(model, src):
    with pytest.raises(ValueError, match=re.escape("tgt must hold at least one sequence of at least one token "
                                                   "(B >= 1, L >= 1), got shape (2, 0)")):
        model(src, torch.zeros(B, 0, dtype=torch.long))


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.float32, torch.bool])
@pytest.mark.parametrize("side", ["src", "tgt"])
def test_ids_of_another_dtype_are_refused_with_the_dtype_named(model, src, tgt, dtype, side):
    args = {"src": src, "tgt": tgt}
    args[side] = args[side].to(dtype)
    with pytest.raises(TypeError, match=rf"{side} must hold integer token ids as torch.long \(or torch.int32\), "
                                        rf"got dtype {dtype}"):
        model(args["src"], args["tgt"])
    model(src.int(), tgt.int())  # int32 is an index type nn.Embedding takes


def test_a_list_passed_as_a_mask_is_a_type_error_naming_it(model, src, tgt):
    as_list = [[True] * S] * B
    with pytest.raises(TypeError, match="src_mask must be a torch.Tensor, got list"):
        model(src, tgt, src_mask=as_list)
    with pytest.raises(TypeError, match="tgt_mask must be a torch.Tensor, got list"):
        model(src, tgt, tgt_mask=[[True] * T] * T)
    with pytest.raises(TypeError, match="src_mask must be a torch.Tensor, got list"):
        model.decode(tgt, model.encode(src), src_mask=as_list)
    with pytest.raises(TypeError, match=r"tgt_mask must be a boolean tensor \(True = may attend\), got dtype "
                                        r"torch.float32"):
        model(src, tgt, tgt_mask=torch.ones(T, T))
    mha, x = tl.MultiHeadAttention(D, H), torch.randn(B, T, D)
    with pytest.raises(TypeError, match="mask must be a torch.Tensor, got list"):
        mha(x, x, x, mask=[[True] * T] * T)


@pytest.mark.parametrize("name, value, error, message", [
    ("bos_id", 1.0, TypeError, r"bos_id must be an int in \[0, 13\), got float 1.0"),
    ("bos_id", "1", TypeError, r"bos_id must be an int in \[0, 13\), got str '1'"),
    ("bos_id", True, TypeError, r"bos_id must be an int in \[0, 13\), got bool True"),
    ("eos_id", 2.5, TypeError, r"eos_id must be an int in \[0, 13\), got float 2.5"),
    ("eos_id", 13, ValueError, r"eos_id must be in \[0, 13\), got 13"),
])
def test_bos_and_eos_ids_must_be_ints_of_the_target_vocabulary(model, src, name, value, error, message):
    ids = {"bos_id": 1, "eos_id": 2, name: value}
    with pytest.raises(error, match=message):
        tl.greedy_decode(model, src, 9, ids["bos_id"], ids["eos_id"])
    with pytest.raises(error, match=message):
        tl.beam_search(model, src, 2, 9, ids["bos_id"], ids["eos_id"])


@pytest.mark.parametrize("alpha", [math.nan, math.inf, -0.5])
def test_the_length_penalty_must_be_a_finite_non_negative_number(model, src, alpha):
    message = re.escape(f"length_penalty must be a finite number >= 0.0, got {alpha}")
    with pytest.raises(ValueError, match=message):
        tl.beam_search(model, src, 2, 9, 1, 2, length_penalty=alpha)
    with pytest.raises(ValueError, match=message):
        tl.generate(model, src, 1, 2, beam_size=2, length_penalty=alpha)
    with pytest.raises(ValueError, match=message):
        tl.TransformerConfig(SRC_V, TGT_V, d_model=D, num_heads=H, length_penalty=alpha)


@pytest.mark.parametrize("eps", [-1e-5, 0.0, math.nan])
def test_layer_norm_eps_must_be_positive(eps):
    message = f"layer_norm_eps must be positive and finite, got {eps}"
    with pytest.raises(ValueError, match=message):
        tl.TransformerConfig(SRC_V, TGT_V, d_model=D, num_heads=H, layer_norm_eps=eps)
    with pytest.raises(ValueError, match=message):
        tl.EncoderLayer.build(D, H, 20, layer_norm_eps=eps)
    with pytest.raises(ValueError, match=message):
        tl.Decoder(1, D, H, 20, layer_norm_eps=eps)


def test_num_eval_zero_is_refused():
    with pytest.raises(ValueError, match="num_eval must be a positive int, got 0"):
        tl.RunConfig(num_eval=0)


def poison_logits(model, from_step):
    """Make the output projection return NaN once the decoder has seen ``from_step`` tokens
    (a model whose weights went bad in a way only some inputs reveal)."""
    seen = []

    def hook(module, inputs, output):
        seen.append(1)
        return output.masked_fill(torch.tensor(len(seen) >= from_step), math.nan)

    return model.output_projection.register_forward_hook(hook)


def test_greedy_decoding_stops_at_non_finite_logits_naming_the_step(model, src):
    poison_logits(model, from_step=3)
    with pytest.raises(FloatingPointError, match=r"decoding step 3: the model's logits are not finite \(NaN or inf\) "
                                                 r"in batch row\(s\) \[0, 1\]"):
        tl.greedy_decode(model, src, 9, 1, 2)


def test_beam_search_stops_at_non_finite_logits_naming_the_step(model, src):
    poison_logits(model, from_step=2)
    with pytest.raises(FloatingPointError, match=r"decoding step 2: the model's logits are not finite"):
        tl.beam_search(model, src, 2, 9, 1, 2)


def test_nan_weights_make_decoding_fail_at_the_first_step(model, src):
    with torch.no_grad():
        model.output_projection.bias.fill_(math.nan)
    for decode in (lambda: tl.generate(model, src, 1, 2), lambda: tl.generate(model, src, 1, 2, beam_size=3)):
        with pytest.raises(FloatingPointError, match="decoding step 1: "):
            decode()
