"""Encoded examples, padded batches and token-budget batching (Section 5.1).

"Sentence pairs were batched together by approximate sequence length. Each training batch
contained a set of sentence pairs containing approximately 25000 source tokens and 25000
target tokens." Here a batch holds at most ``max_tokens`` tokens *including padding* on
each side, ``batch_size * max_len_in_batch <= max_tokens``, a slightly stricter budget
than the paper's count of real tokens, so a batch's memory is bounded.

Shapes: B batch, S source length, T target length (``tgt_in`` and ``tgt_out``).
"""

from __future__ import annotations

from functools import partial
from typing import Iterable, Iterator, NamedTuple, Sequence

import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, Sampler

from .. import checks
from .tasks import Pair, TaskData, make_task
from .vocabulary import EOS_ID, PAD_ID, Vocabulary



class Example(NamedTuple):
    src: Tensor  # (S,) source ids ending in <eos>
    tgt: Tensor  # (T + 1,) target ids framed by <bos> ... <eos>
    index: int


class TranslationDataset(Dataset):
    """Encoded (source, target) pairs. ``src`` ends with ``<eos>``; ``tgt`` is
    ``<bos> y_1 ... y_n <eos>``, which ``collate`` shifts into ``tgt_in``/``tgt_out``.

    ``src_lengths[i]`` is S and ``tgt_lengths[i]`` is T = n + 1 for example i: the lengths
    the batch sampler budgets.
    """

    def __init__(self, pairs: Sequence[Pair], src_vocab: Vocabulary, tgt_vocab: Vocabulary):
        self.pairs = list(pairs)
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.src_ids = [src_vocab.encode(s) for s, _ in self.pairs]
        self.tgt_ids = [tgt_vocab.encode(t, add_bos=True, add_eos=True) for _, t in self.pairs]
        self.src_lengths = [len(x) for x in self.src_ids]
        self.tgt_lengths = [len(y) - 1 for y in self.tgt_ids]

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, index: int) -> Example:
        return Example(
            torch.tensor(self.src_ids[index], dtype=torch.long),
            torch.tensor(self.tgt_ids[index], dtype=torch.long),
            index,
        )


class Batch(NamedTuple):
    """A padded batch. ``tgt_in`` = ``<bos> y_1 .. y_n`` and ``tgt_out`` = ``y_1 .. y_n <eos>``:
    the output embeddings "are offset by one position" (Section 3.1, the decoder)."""

    src: Tensor  # (B, S)
    tgt_in: Tensor  # (B, T)
    tgt_out: Tensor  # (B, T)
    src_tokens: int  # non-pad source tokens
    tgt_tokens: int  # non-pad target tokens (positions that count in the loss)
    indices: Tensor  # (B,) dataset indices, to restore the original order

    def head(self, n: int, pad_id: int = PAD_ID) -> "Batch":
        """The first ``n`` examples (token counts recounted; padding columns kept)."""
        src, tgt_in, tgt_out = self.src[:n], self.tgt_in[:n], self.tgt_out[:n]
        return Batch(src, tgt_in, tgt_out, int((src != pad_id).sum()), int((tgt_out != pad_id).sum()),
                     self.indices[:n])

    def to(self, device, non_blocking: bool = False) -> "Batch":
        move = partial(Tensor.to, device=device, non_blocking=non_blocking)
        return self._replace(
            src=move(self.src), tgt_in=move(self.tgt_in), tgt_out=move(self.tgt_out), indices=move(self.indices)
        )


def collate(examples: Sequence[Example], pad_id: int = PAD_ID) -> Batch:
    """Pad a list of ``Example`` into a ``Batch`` of (B, S) and (B, T) tensors."""
    if len(examples) == 0:
        raise ValueError("examples must be a non-empty sequence of Example")
    src = torch.nn.utils.rnn.pad_sequence([e.src for e in examples], batch_first=True, padding_value=pad_id)  # (B, S)
    tgt = torch.nn.utils.rnn.pad_sequence(
        [e.tgt for e in examples], batch_first=True, padding_value=pad_id
    )  # (B, T + 1)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]  # (B, T), (B, T)
    # The shorter rows' <eos> sits inside tgt_in after slicing; it is followed only by
    # padding targets, so the loss never asks to predict anything after it.
    tgt_in = tgt_in.masked_fill(tgt_in == EOS_ID, pad_id)
    indices = torch.tensor([e.index for e in examples], dtype=torch.long)  # (B,)
    return Batch(
        src, tgt_in.contiguous(), tgt_out.contiguous(),
        int((src != pad_id).sum()), int((tgt_out != pad_id).sum()), indices,
    )


# --------------------------------------------------------------------------- batching


class TokenBatchSampler(Sampler[list[int]]):
    """Batches of dataset indices by token budget, bucketed by length (Section 5.1).

    Per epoch: shuffle the indices (``seed + epoch``), cut them into pools of ``pool_size``,
    sort each pool by (source length, target length), then fill batches greedily so that
    ``len(batch) * max(lengths in batch) <= max_tokens`` on the source *and* the target
    side. The batch order is shuffled too. ``pool_size=None`` sorts the whole data set
    (least padding; for evaluation); ``pool_size=1`` is random batching.

    Sharding for DistributedDataParallel: rank r of ``num_replicas`` gets batches
    r, r + R, r + 2R, ... Before that, the largest batches are split in two until the
    count divides by R, so every rank gets the same number of batches and together they
    hold every example exactly once. Only if there are fewer examples than that needs are
    batches repeated (as ``DistributedSampler`` does). Call ``set_epoch`` every epoch.
    """

    def __init__(
        self,
        src_lengths: Sequence[int],
        tgt_lengths: Sequence[int],
        max_tokens: int,
        *,
        shuffle: bool = True,
        seed: int = 0,
        pool_size: int | None = 4096,
        num_replicas: int = 1,
        rank: int = 0,
    ):
        if len(src_lengths) != len(tgt_lengths):
            raise ValueError(
                f"src_lengths and tgt_lengths must have the same length, got {len(src_lengths)} and {len(tgt_lengths)}"
            )
        checks.positive_int("max_tokens", max_tokens)
        longest = max([*src_lengths, *tgt_lengths], default=0)
        if longest > max_tokens:
            raise ValueError(f"max_tokens={max_tokens} is smaller than the longest sequence ({longest} tokens)")
        if pool_size is not None and (not isinstance(pool_size, int) or pool_size < 1):
            raise ValueError(f"pool_size must be a positive int or None, got {pool_size!r}")
        checks.positive_int("num_replicas", num_replicas)
        if not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ValueError(f"rank must be an int in [0, num_replicas={num_replicas}), got {rank!r}")
        self.src_lengths, self.tgt_lengths = list(src_lengths), list(tgt_lengths)
        self.max_tokens, self.shuffle, self.seed, self.pool_size = max_tokens, shuffle, seed, pool_size
        self.num_replicas, self.rank = num_replicas, rank
        self.epoch = 0
        self._cache: tuple[int, list[list[int]]] | None = None

    def set_epoch(self, epoch: int) -> None:
        """A different shuffle per epoch, identical on every rank."""
        self.epoch = epoch

    def _fits(self, size: int, max_src: int, max_tgt: int) -> bool:
        return size * max_src <= self.max_tokens and size * max_tgt <= self.max_tokens

    def all_batches(self) -> list[list[int]]:
        """This epoch's batches for every rank, before sharding."""
        if self._cache is not None and self._cache[0] == self.epoch:
            return self._cache[1]
        n = len(self.src_lengths)
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        order = torch.randperm(n, generator=g).tolist() if self.shuffle else list(range(n))
        pool = self.pool_size or max(n, 1)
        key = lambda i: (self.src_lengths[i], self.tgt_lengths[i])  # noqa: E731
        order = [i for start in range(0, n, pool) for i in sorted(order[start: start + pool], key=key)]
        batches: list[list[int]] = []
        batch: list[int] = []
        max_src = max_tgt = 0
        for i in order:
            s, t = max(max_src, self.src_lengths[i]), max(max_tgt, self.tgt_lengths[i])
            if batch and not self._fits(len(batch) + 1, s, t):
                batches.append(batch)
                batch, s, t = [], self.src_lengths[i], self.tgt_lengths[i]
            batch.append(i)
            max_src, max_tgt = s, t
        if batch:
            batches.append(batch)
        batches = self._make_divisible(batches)
        if self.shuffle:
            perm = torch.randperm(len(batches), generator=g).tolist()
            batches = [batches[p] for p in perm]
        self._cache = (self.epoch, batches)
        return batches

    def _make_divisible(self, batches: list[list[int]]) -> list[list[int]]:
        r = self.num_replicas
        while len(batches) % r:
            largest = max(range(len(batches)), key=lambda b: len(batches[b]), default=None)
            if largest is None or len(batches[largest]) < 2:
                break
            b = batches.pop(largest)
            batches[largest:largest] = [b[: len(b) // 2], b[len(b) // 2:]]
        if batches and len(batches) % r:  # fewer examples than ranks need: repeat
            batches += batches[: r - len(batches) % r]
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.all_batches()[self.rank:: self.num_replicas])

    def __len__(self) -> int:
        return len(self.all_batches()) // self.num_replicas


def padding_fraction(batches: Iterable[Sequence[int]], lengths: Sequence[int]) -> float:
    """Share of the padded tensor that is padding: 1 - sum(lengths) / sum(B * max length)."""
    real = padded = 0
    for batch in batches:
        ls = [lengths[i] for i in batch]
        real += sum(ls)
        padded += len(ls) * max(ls)
    return 1.0 - real / padded if padded else 0.0


class Loaders(NamedTuple):
    train: DataLoader
    validation: DataLoader
    test: DataLoader
    src_vocab: Vocabulary
    tgt_vocab: Vocabulary
    data: TaskData


def make_loaders(
    task: str | TaskData,
    seed: int = 0,
    max_tokens: int = 2048,
    *,
    num_train: int = 10_000,
    num_validation: int = 500,
    num_test: int = 500,
    pool_size: int | None = 4096,
    num_replicas: int = 1,
    rank: int = 0,
    num_workers: int = 0,
    **options,
) -> Loaders:
    """Train, validation and test ``DataLoader`` of ``Batch`` for a task name (or ready
    ``TaskData``), with the vocabularies.

    Training batches are bucketed, shuffled per epoch (call
    ``loaders.train.batch_sampler.set_epoch(epoch)``) and sharded over ``num_replicas``;
    evaluation batches are sorted by length, in a fixed order, unsharded (every rank sees
    the whole held-out split). ``options`` go to ``make_task``.
    """
    data = task if isinstance(task, TaskData) else make_task(
        task, seed, num_train=num_train, num_validation=num_validation, num_test=num_test, **options
    )

    def loader(pairs: list[Pair], train: bool) -> DataLoader:
        ds = TranslationDataset(pairs, data.src_vocab, data.tgt_vocab)
        sampler = TokenBatchSampler(
            ds.src_lengths, ds.tgt_lengths, max_tokens, shuffle=train, seed=seed,
            pool_size=pool_size if train else None,
            num_replicas=num_replicas if train else 1, rank=rank if train else 0,
        )
        return DataLoader(ds, batch_sampler=sampler, collate_fn=collate, num_workers=num_workers)

    return Loaders(
        loader(data.train, True), loader(data.validation, False), loader(data.test, False),
        data.src_vocab, data.tgt_vocab, data,
    )
