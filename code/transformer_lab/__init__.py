"""transformer_lab: "Attention Is All You Need" (Vaswani et al., 2017) in tested PyTorch.

Modules follow the paper (and the slides) in order; this file only re-exports them.
Importing it pulls in neither matplotlib nor tqdm nor sacrebleu: the teaching helpers
(plots, shape traces, timings) live in ``transformer_lab.teaching``, imported on its own,
and the command lines in ``transformer_lab.cli``.
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
from .layers import Decoder, DecoderCache, DecoderLayer, Encoder, EncoderLayer, LayerConfig
from .model import Transformer, TransformerConfig, count_parameters
from .recording import AttentionRecord, record_attention
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
from .decoding import beam_search, generate, gnmt_length_penalty, greedy_decode, greedy_steps
from .evaluation import corpus_bleu, evaluate
from .checkpoint import (
    CheckpointError,
    CheckpointWriteError,
    average_checkpoints,
    average_state_dicts,
    list_checkpoints,
    load_checkpoint,
    save_checkpoint,
)
from .distributed import resolve_device
from .inference import cross_attention, load_model, translate
from .callbacks import Callback, ConsoleReport, Progress, ProgressBar
from .run_config import PRESETS, RECIPES, RunConfig
from .run_files import TrainError
from .run import RunResult, fit
# Since 2017: later changes, each a module that plugs into the paper's model
from .rms_norm import RMSNorm, use_rms_norm
from .gated_feed_forward import GELUFeedForward, SwiGLU, swiglu_d_ff
from .rotary import RotaryEmbedding
from .alibi import ALiBi, alibi_bias, alibi_slopes
from .attention_positions import NoPositionalEncoding, remove_positional_encoding
from .grouped_query_attention import GroupedQueryAttention
from .decoder_only import (
    DecoderOnlyCache,
    DecoderOnlyConfig,
    DecoderOnlyLayer,
    DecoderOnlyTransformer,
    LanguageModelBatch,
    language_model_batch,
    language_model_loss_sum,
)
from .decoder_only_decoding import decoder_only_beam_search, decoder_only_greedy_decode

__version__ = "0.1.0"
