"""transformer_lab: "Attention Is All You Need" (Vaswani et al., 2017) in tested PyTorch.

Modules follow the paper (and the slides) in order; this file only re-exports them.
"""

from .embeddings import TokenEmbedding
from .positional_encoding import (
    LearnedPositionalEncoding,
    PositionalEncoding,
    relative_position_map,
    sinusoidal_positional_encoding,
)
from .attention import attention_weights, scaled_dot_product_attention
from .masks import causal_mask, padding_mask
from .multi_head_attention import KVCache, MultiHeadAttention
from .feed_forward import PositionwiseFeedForward
from .layers import Decoder, DecoderCache, DecoderLayer, Encoder, EncoderLayer
from .model import Transformer, TransformerConfig, count_parameters
from .data import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    TASKS,
    UNK_ID,
    Batch,
    TaskData,
    TokenBatchSampler,
    TranslationDataset,
    Vocabulary,
    collate,
    get_task,
    make_loaders,
    make_task,
    padding_fraction,
)
from .training import (
    LabelSmoothingLoss,
    WarmupSchedule,
    batch_loss_sum,
    make_optimizer,
    noam_learning_rate,
    train_step,
)
from .decoding import beam_search, gnmt_length_penalty, greedy_decode
from .evaluation import corpus_bleu, evaluate
from .checkpoint import (
    CheckpointError,
    average_checkpoints,
    average_state_dicts,
    list_checkpoints,
    load_checkpoint,
    save_checkpoint,
)
from .distributed import resolve_device
from .visualization import (
    PALETTE,
    plot_attention,
    plot_attention_cost,
    plot_decode_step_times,
    plot_attention_heads,
    plot_dot_product_variance,
    plot_label_smoothing,
    plot_layer_gradient_norms,
    plot_learning_rate_schedule,
    plot_mask,
    plot_positional_encoding,
    plot_scaling_argument,
    plot_softmax_saturation,
    plot_training_curves,
    plot_wavelengths,
)
from . import speed
from .introspection import layer_gradient_norms, source_code, source_markdown, trace_shapes

__version__ = "0.1.0"
