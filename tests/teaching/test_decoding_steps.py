"""The slides' step-by-step decoders agree with the package's greedy and beam search."""

import pytest
import torch

import transformer_lab as tl
from transformer_lab import teaching as tt

BOS, EOS = tl.BOS_ID, tl.EOS_ID


def random_model(seed: int, tgt_vocab: int = 11) -> tl.Transformer:
    torch.manual_seed(seed)
    return tl.Transformer(tl.TransformerConfig.tiny(17, tgt_vocab, d_model=12, num_heads=3, d_ff=20)).eval()


def source(seed: int, length: int = 7) -> torch.Tensor:
    return torch.randint(4, 17, (1, length), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("seed", range(6))
def test_the_step_table_chooses_greedy_decodes_tokens(seed):
    model, src = random_model(seed), source(seed)
    steps = tt.greedy_step_table(model, src, BOS, EOS, max_len=9, top=5)
    chosen = [BOS] + [s.chosen for s in steps]
    expected = tl.greedy_decode(model, src, 9, BOS, EOS)[0].tolist()
    assert chosen == expected[: len(chosen)] and len(chosen) == len(expected)
    for t, step in enumerate(steps):
        assert step.prefix == chosen[: t + 1]
        assert step.top_ids[0] == step.chosen and len(step.top_ids) == 5
        assert step.top_probs == sorted(step.top_probs, reverse=True) and sum(step.top_probs) <= 1 + 1e-6


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("beam_size", [2, 3, 4])
def test_the_beam_trees_best_hypothesis_is_beam_searchs(seed, beam_size):
    model, src = random_model(seed), source(seed)
    tree = tt.beam_tree(model, src, beam_size, 8, BOS, EOS, length_penalty=0.6)
    expected = tl.beam_search(model, src, beam_size, 8, BOS, EOS, 0.6)[0].tolist()
    assert tree.best == expected


def test_finished_hypotheses_carry_the_length_penalised_score_of_their_path():
    model, src = random_model(3), source(3)
    tree = tt.beam_tree(model, src, 3, 10, BOS, EOS, length_penalty=0.6)
    finished = [n for n in tree.nodes if n.status == "finished"]
    assert len(finished) == len(tree.finished) >= 3
    for node, (final, tokens) in zip(finished, tree.finished):
        assert tokens == tree.tokens(node.id) and len(tokens) == node.step + 1
        assert final == pytest.approx(node.score / tl.gnmt_length_penalty(node.step, 0.6))
    kept_per_step = {}
    for n in tree.nodes:
        kept_per_step[n.step] = kept_per_step.get(n.step, 0) + (n.status == "kept")
    assert max(kept_per_step.values()) <= 3


def test_the_beam_tree_figure_has_one_box_per_kept_or_finished_node():
    model, src = random_model(1), source(1)
    tree = tt.beam_tree(model, src, 3, 6, BOS, EOS)
    fig = tt.plot_beam_tree(tree, [f"t{i}" for i in range(11)])
    boxes = [t for t in fig.axes[0].texts if t.get_bbox_patch() is not None]
    assert len(boxes) == sum(n.status != "pruned" for n in tree.nodes)


def test_step_helpers_reject_a_batch_of_inputs():
    model = random_model(0)
    with pytest.raises(ValueError, match=r"src must be a \(1, S\) tensor of token ids \(one input\), got"):
        tt.greedy_step_table(model, torch.ones(2, 5, dtype=torch.long), BOS, EOS, 5)
    with pytest.raises(ValueError, match="beam_size must be a positive int, got 0"):
        tt.beam_tree(model, source(0), 0, 5, BOS, EOS)
