"""Data: toy translation tasks generated from a seed, a tokenizer and token-budget batches
(Section 5.1 of Vaswani et al., 2017).

``vocabulary`` (the tokenizer and its special tokens), ``tasks`` (the generated tasks and
their splits) and ``batching`` (padded batches, the token-budget sampler, the loaders).
This file only re-exports them.
"""

from .vocabulary import (BOS, BOS_ID, EOS, EOS_ID, PAD, PAD_ID, SPECIALS, TOKENIZE_MODES, UNK, UNK_ID, Vocabulary,
                         normalise_text)
from .tasks import (
    ANIMAL_ADJECTIVES,
    ANIMALS,
    MONTHS,
    PLACE_ADJECTIVES,
    PLACES,
    PRONOUN_TEMPLATES,
    TASKS,
    WEEKDAYS,
    Pair,
    TaskData,
    TaskSpec,
    copy_example,
    dates_example,
    get_task,
    make_task,
    number_words,
    numbers_example,
    ordinal_words,
    pronoun_example,
    reverse_example,
    sort_example,
    year_words,
)
from .batching import (
    Batch,
    Example,
    Loaders,
    TokenBatchSampler,
    TranslationDataset,
    collate,
    make_loaders,
    padding_fraction,
)
