"""Helpers for teaching with the package: the deck's figures, shape traces, source for
slides, and timing. Import it explicitly (it pulls in matplotlib; the model does not):

    from transformer_lab import teaching as tt
    fig = tt.plot_attention(weights, query_labels, key_labels)

Modules: ``style`` (the palette and rcParams), ``plots_attention``, ``plots_model``,
``plots_training``, ``plots_speed``, ``plots_tokens``, ``plots_trained``, ``plots_beam``,
``plots_paper``, ``plots_families`` (figures; the last, the three families of models and
their masks), ``plots_map`` (a small map of the whole model with the slide's part
highlighted), ``plots_inputs`` (one sentence's scaled embeddings plus positions, the
encoder's input: ``sentence_inputs`` and ``plot_token_vectors``), ``introspection``
(shapes, gradient norms, source code), ``speed`` (timings), ``scaling`` (Table 1's terms
and the timed layers' multiply-adds, counted and measured), ``paper`` (the paper's Tables
2-4 as cited data), ``cache`` (expensive results kept on disk, keyed by their inputs and
the package's source), ``by_hand`` (one head and layer normalisation step by step, LaTeX
matrices, a check's line with the tests' tolerance), ``bleu`` (BLEU on one sentence pair), ``bpe`` and ``corpus`` (byte-pair
encoding learned on a small text, from its characters or from the 256 bytes), ``tables`` (markdown tables), ``legibility`` (text
large enough for a slide), ``pronoun`` (what a trained encoder's heads do with "it"),
``decoding_steps`` (greedy decoding step by step, a recorded beam search, the output layer of
one step), ``dropout`` (runs with and without dropout, like for like),
``deck_models`` (the trained models the deck shows, defined once: ``pronoun_model()``,
``dates_model()``), ``since2017`` (the later changes trained and timed side by side:
``changes_compared``, ``positions_beyond_training``, ``warmup_and_layer_norm``,
``kv_cache_costs``), ``mistakes`` (the mistakes gallery: each reimplementation bug's
symptom, computed with a broken copy of one step) and ``unspecified`` (what the paper leaves
open, computed where it can be). This file only re-exports them.
"""

from .style import ATTENTION_CMAP, DIVERGING_CMAP, FIGSIZE, MASK_CMAP, OTHER, PALETTE, SERIES_COLORS, STYLE
from .plots_attention import plot_attention, plot_attention_heads, plot_mask, plot_masks
from .plots_model import (
    plot_dot_product_variance,
    plot_position_rotation,
    plot_positional_encoding,
    plot_scaling_argument,
    plot_softmax_saturation,
    plot_wavelengths,
)
from .plots_training import (
    plot_dropout_runs,
    plot_label_smoothing,
    plot_layer_gradient_norms,
    plot_learning_rate_schedule,
    plot_training_curves,
)
from .plots_speed import (plot_attention_cost, plot_decode_panels, plot_decode_step_times, plot_sequential_products,
                          plot_table1_scaling)
from .plots_paper import plot_table2, plot_table3
from .plots_tokens import plot_vocabulary_tradeoff
from .plots_map import MAP_KEYS, plot_model_map
from .plots_inputs import SentenceInputs, plot_token_vectors, sentence_inputs
from .introspection import gradient_norms_by_placement, layer_gradient_norms, source_code, source_markdown, trace_shapes
from .cache import cache_directory, cached, set_cache_directory
from .deck_models import (CONTRAST_SENTENCE, DATES_MODEL, PRONOUN_MODEL, RUNNING_SENTENCE, TABLE1_D_MODEL, TABLE1_LENGTHS,
                          DeckModel, attention_path_times, dates_model, dropout_curves, kv_step_times, pronoun_model,
                          table1_times)
from .speed import attention_cost, attention_paths, decode_step_times, median_times
from .scaling import (
    LAYER_MAC_FORMULAS,
    LAYER_MAC_TERMS,
    MatrixProduct,
    attention_vs_recurrence,
    cached_step_macs,
    chain_summary,
    layer_macs,
    loglog_slope,
    mac_rates,
    macs_crossover,
    multi_head_macs,
    power_law_crossover,
    sequential_products,
    table1_flops,
)
from . import paper
from .by_hand import (TOLERANCES, LayerNormSteps, OneHead, bmatrix, difference_line, format_number, layer_norm,
                      layer_norm_steps, math_span, next_token_loss, one_head_steps)
from .bleu import SentenceBleu, sentence_bleu
from .bpe import (BYTE_SYMBOLS, BytePairEncoding, byte_symbols, learn_bpe, learn_byte_bpe, pre_tokenize, split_sentences,
                  symbol_bytes, tokens_per_sentence)
from .tables import markdown_table
from .since2017 import (CHANGES, DECK_BUDGET, Budget, changes_compared, kv_cache_costs, positions_beyond_training,
                        warmup_and_layer_norm)
from .legibility import enlarge_text, smallest_text, text_sizes
from . import corpus
from .pronoun import (AntecedentAttention, antecedent_attention, antecedent_attention_by_kind, encoder_attention,
                      HeadChoice, contrast_head, noun_positions, place_preference, weights_from_it)
from .plots_trained import plot_antecedent_heads, plot_weights_from
from .plots_beam import plot_beam_tree
from .decoding_steps import (BeamNode, BeamTree, DecodingStep, OutputLayer, beam_tree, greedy_step_table, output_layer,
                             untrained_like)
from .plots_families import Family, model_families, plot_model_families
from .dropout import DROPOUT_SETTINGS, dropout_runs, final_losses
from . import claims, deck_claims, mistakes, unspecified
