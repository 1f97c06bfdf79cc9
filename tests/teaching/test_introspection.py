"""The helpers the slides use to show shapes, gradients and code."""

import pytest
import torch

import transformer_lab as tl
from transformer_lab.teaching import layer_gradient_norms, source_code, source_markdown, trace_shapes


def tiny_model(**overrides):
    options = dict(d_model=12, num_heads=3, d_ff=20, num_layers=2, dropout=0.0)
    config = tl.TransformerConfig(src_vocab_size=23, tgt_vocab_size=19, **{**options, **overrides})
    return tl.Transformer(config)


def test_trace_shapes_follows_one_batch_through_the_model():
    model = tiny_model()
    src, tgt = torch.randint(4, 23, (2, 7)), torch.randint(4, 19, (2, 5))
    trace = dict(trace_shapes(model, src, tgt))
    assert trace["src tokens"] == (2, 7)
    assert trace["src_embed"] == (2, 7, 12)
    assert trace["encoder.layers.1"] == (2, 7, 12)
    assert trace["decoder.layers.1"] == (2, 5, 12)
    assert trace["output_projection"] == (2, 5, 19)
    assert not model.encoder.layers[0]._forward_hooks, "hooks are removed afterwards"


def test_post_ln_decoder_gradients_grow_towards_the_output_and_pre_ln_ones_do_not():
    # Xiong et al. (2020): at initialisation post-LN gives the layers near the output
    # much larger gradients, hence the warm-up; pre-LN does not.
    src, tgt = torch.randint(4, 23, (16, 12)), torch.randint(4, 19, (16, 11))
    norms = {}
    for norm_first in (False, True):
        torch.manual_seed(0)
        model = tiny_model(num_layers=6, d_model=32, num_heads=4, d_ff=64, norm_first=norm_first)
        norms[norm_first] = layer_gradient_norms(model, src, tgt[:, :-1], tgt[:, 1:])
    post, pre = norms[False]["decoder"], norms[True]["decoder"]
    assert len(post) == 6 and all(n > 0 for n in post + pre)
    assert post[-1] / post[0] > 2.0
    assert pre[-1] / pre[0] < 1.0


def test_source_code_is_the_package_source_without_the_docstring():
    code = source_code(tl.noam_learning_rate)
    assert code.startswith("def noam_learning_rate(")
    assert "Equation (3)" not in code and "min(step**-0.5" in code
    part = source_code(tl.MultiHeadAttention.forward, start="dropout_p = ", stop="return")
    assert part.startswith("dropout_p = ") and "heads = attend(" in part and "return" not in part
    assert source_markdown(tl.causal_mask).startswith("```python\ndef causal_mask(")
    with pytest.raises(ValueError, match="does not occur"):
        source_code(tl.causal_mask, start="no such line")
