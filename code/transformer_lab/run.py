"""A training run (Section 5 of Vaswani et al., 2017): ``fit(RunConfig(...)) -> RunResult``.

The paper's recipe is the default: Adam with beta1 0.9, beta2 0.98, eps 1e-9 (5.3), the
warm-up learning-rate schedule of equation (3) (5.3), label smoothing 0.1 and dropout 0.1
(5.4), batches bucketed by length under a token budget (5.1), and averaging of the last
checkpoints (6.1). Gradient clipping (``clip_norm``) is an option the paper does not use.

    result = fit(RunConfig(task="dates", time_budget=60))             # in memory, no files
    result = fit(RunConfig(task="dates", output_dir="runs/dates"), [ProgressBar()])
    result.model, result.history, result.test
    result.data.test                                                   # the test examples

With an ``output_dir`` the run writes checkpoints, metrics and a summary there (see
``run_files``); Ctrl-C stops after the current step and saves a checkpoint, and
``resume=True`` continues exactly. Under ``torchrun`` the same call trains with
DistributedDataParallel (see ``distributed``). Callbacks receive the run's events (see
``callbacks``).
"""

from __future__ import annotations

import contextlib
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import torch
from torch.nn.parallel import DistributedDataParallel

from .callbacks import Callback, Progress
from .checkpoint import describe_error, rng_kept, rng_state, set_rng_state
from .data import Batch, TaskData, Vocabulary, collate, make_loaders
from .distributed import (
    DistInfo,
    all_reduce_sum,
    barrier,
    default_threads,
    env_dist_info,
    init_distributed,
    resolve_device,
    shutdown_distributed,
    usable_threads,
)
from .evaluation import evaluate
from .model import Transformer, TransformerConfig
from .run_config import RunConfig, recipe
from .run_files import RunDirectory, TrainError, resumed_config, resumed_run
from .training import LabelSmoothingLoss, WarmupSchedule, make_optimizer, train_step


@dataclass
class RunResult:
    """What a run produced. ``model`` is in eval mode, with the averaged weights when
    checkpoints were averaged. ``test`` and ``test_averaged`` are the test split's
    metrics (on the main process; none after an interruption). ``data`` holds the
    examples the run was given: ``data.train``, ``data.validation`` and ``data.test``, the
    (source, target) pairs it trained, validated and was tested on, generated from the
    run's task and seed (its vocabularies are ``src_vocab`` and ``tgt_vocab``); not part
    of :meth:`summary`."""

    model: Transformer
    src_vocab: Vocabulary
    tgt_vocab: Vocabulary
    run: dict
    step: int
    train_seconds: float
    interrupted: bool
    history: list[dict]
    output_dir: Path | None = None
    test: dict | None = None
    test_averaged: dict | None = None
    averaged_steps: list[int] | None = None
    data: TaskData | None = None

    def summary(self) -> dict:
        """JSON-ready: what ``summary.json`` holds."""
        out = {"step": self.step, "train_seconds": self.train_seconds, "interrupted": self.interrupted,
               "output_dir": None if self.output_dir is None else str(self.output_dir), "run": self.run}
        if self.test is not None:
            out["test"] = self.test
        if self.averaged_steps is not None:
            out.update(averaged_steps=self.averaged_steps, test_averaged=self.test_averaged)
        return out


@dataclass(frozen=True)
class Schedule:
    """When the loop stops, evaluates and saves: ``steps`` (``None``: at the time budget)."""

    steps: int | None
    eval_interval: int
    checkpoint_interval: int

    @classmethod
    def of(cls, config: RunConfig, run: dict) -> "Schedule":
        r = recipe(run["preset"], run["task"])
        steps = config.steps if config.steps is not None else (None if config.time_budget else r["steps"])
        eval_interval = config.eval_interval or r["eval_interval"]
        return cls(steps, eval_interval, config.checkpoint_interval or eval_interval)


def model_config(run: dict, src_vocab: Vocabulary, tgt_vocab: Vocabulary) -> TransformerConfig:
    """The run's preset with its overrides, sized to the vocabularies."""
    make = getattr(TransformerConfig, run["preset"])
    overrides = dict(run["model_overrides"])
    if run["dropout"] is not None:
        overrides["dropout"] = run["dropout"]
    shared = src_vocab == tgt_vocab
    return make(len(src_vocab), len(tgt_vocab), **{"shared_vocab": shared, **overrides})


def fit(config: RunConfig, callbacks: Iterable[Callback] = ()) -> RunResult:
    """Train as ``config`` says, report to ``callbacks``, return the :class:`RunResult`.

    With an ``output_dir``, the run holds the directory's lock from start to end (a second
    run into it is refused) and checks that it can write there before the first step.
    ``resume=True`` continues the latest checkpoint's run; the options that define a run
    (``RUN_OPTIONS``) must agree with the checkpoint's, or a TrainError lists each one.
    """
    if not isinstance(config, RunConfig):
        raise TypeError(f"config must be a RunConfig, got {type(config).__name__}")
    info = env_dist_info()
    device = resolve_device(config.device, info.local_rank)
    if config.threads:  # asked for: kept after the run, as torch.set_num_threads keeps it
        torch.set_num_threads(usable_threads(config.threads))
    with _default_threads(config, device):
        return _fit(config, info, device, callbacks)


@contextlib.contextmanager
def _default_threads(config: RunConfig, device: torch.device):
    """Without ``config.threads``: the preset's default thread count (``default_threads``)
    for the run, and the caller's count back afterwards."""
    threads = None if config.threads else default_threads(config.preset, device)
    if threads is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _fit(config: RunConfig, info: DistInfo, device: torch.device, callbacks: Iterable[Callback]) -> RunResult:
    if config.deterministic:
        torch.use_deterministic_algorithms(True)
    files = RunDirectory(config.output_dir) if config.output_dir is not None else None
    with files.claim() if files is not None and info.is_main else contextlib.nullcontext():
        state = files.resume_state() if config.resume else None
        if files is not None and state is None:
            files.check_fresh()
        run = resumed_run(config, state) if state is not None else config.definition()
        if state is not None:  # the intervals not given are the run's, as it evaluated and saved before
            config = resumed_config(config, state)
        init_distributed(info, device)
        trainer = None
        try:
            trainer = _Trainer(config, run, info, device, files, list(callbacks) if info.is_main else [])
            trainer.restore(state)
            return trainer.train()
        finally:
            # The DistributedDataParallel wrapper (trainer.ddp) must go before the group does:
            # destroyed after it, it can hang the process at exit (see shutdown_distributed).
            del trainer
            shutdown_distributed()


class _StopFlag:
    """First Ctrl-C: finish the current step, save, stop. Second: stop at once."""

    def __init__(self):
        self.stop = False
        self._previous = None

    def __enter__(self):
        try:
            self._previous = signal.signal(signal.SIGINT, self._handle)
        except ValueError:  # not the main thread
            self._previous = None
        return self

    def _handle(self, signum, frame):
        if self.stop:
            raise KeyboardInterrupt
        self.stop = True

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
        return False


@dataclass
class _Window:
    """The training loss and tokens since the last log row."""

    start: float
    loss: float = 0.0
    tokens: int = 0

    def add(self, out: dict) -> None:
        self.loss += out["loss"] * out["tokens"]
        self.tokens += out["tokens"]

    def row(self, progress: Progress, lr: float, world_size: int) -> dict:
        seconds = max(progress.train_seconds - self.start, 1e-9)
        return {"step": progress.step, "loss": self.loss / max(self.tokens, 1), "lr": lr,
                "tokens_per_s": self.tokens * world_size / seconds,
                "train_seconds": round(progress.train_seconds, 3)}


def _strip(metrics: dict) -> dict:
    """Metrics for JSON: the (hypothesis, reference) samples as lists."""
    return {k: v for k, v in metrics.items() if k != "samples"} | {"samples": [list(s) for s in metrics["samples"]]}


class _Trainer:
    """One run's data, model, optimiser and progress, and the steps of its loop."""

    def __init__(self, config: RunConfig, run: dict, info: DistInfo, device: torch.device,
                 files: RunDirectory | None, callbacks: list[Callback]):
        self.config, self.run, self.info, self.device = config, run, info, device
        self.files, self.callbacks = files, callbacks
        self.schedule = Schedule.of(config, run)
        random.seed(run["seed"])
        torch.manual_seed(run["seed"])
        self.loaders = make_loaders(
            run["task"], seed=run["seed"], max_tokens=run["max_tokens"], num_train=run["num_train"],
            num_validation=run["num_eval"], num_test=run["num_eval"], num_replicas=info.world_size, rank=info.rank,
        )
        self.model_config = model_config(run, self.loaders.src_vocab, self.loaders.tgt_vocab)
        self.model = Transformer(self.model_config).to(device)  # same initialisation on every rank (same seed)
        self.optimizer = make_optimizer(self.model)
        self.scheduler = WarmupSchedule(self.optimizer, self.model_config.d_model, run["warmup_steps"],
                                        run["lr_factor"])
        self.loss_fn = LabelSmoothingLoss(run["label_smoothing"], ignore_index=self.model_config.pad_id)
        self.progress = Progress(run, self.schedule.steps)
        self.last_saved = -1
        torch.manual_seed(run["seed"] + 1 + info.rank)  # dropout differs between ranks

    def emit(self, event: str, *args) -> None:
        for callback in self.callbacks:
            getattr(callback, event)(self.progress, *args)

    def restore(self, state: dict | None) -> None:
        """Continue from a checkpoint's state (or start fresh), then wrap for DDP."""
        if state is not None:
            try:
                self._load(state)
            except (KeyError, TypeError, ValueError, RuntimeError, IndexError) as e:
                raise TrainError(f"cannot resume: checkpoint {state['path']!r} does not fit this run: "
                                 f"{describe_error(e)}") from e
        if self.files is not None and self.info.is_main:
            self.progress.history = self.files.read_history(self.progress.step)
        device_ids = [self.device.index] if self.device.type == "cuda" else None
        self.ddp = DistributedDataParallel(self.model, device_ids=device_ids) if self.info.enabled else self.model

    def _load(self, state: dict) -> None:
        if state["config"] != self.model_config.to_dict():
            raise ValueError("its model config differs from the one its run definition gives")
        vocabs = (Vocabulary.from_dict(state["src_vocab"]), Vocabulary.from_dict(state["tgt_vocab"]))
        if vocabs != (self.loaders.src_vocab, self.loaders.tgt_vocab):
            raise ValueError("its vocabularies differ from the generated data's")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        set_rng_state(state["rng"][self.info.rank % len(state["rng"])])
        p = self.progress
        p.step, p.epoch, p.position = state["step"], state["sampler"]["epoch"], state["sampler"]["position"]
        p.train_seconds = state.get("train_seconds", 0.0)
        self.last_saved = p.step

    def train(self) -> RunResult:
        self.emit("on_start")
        interrupted = self.loop()
        barrier()
        result = self.finish(interrupted)
        self.emit("on_end", result)
        return result

    def loop(self) -> bool:
        """Update until the schedule or the time budget says stop; True if interrupted."""
        p, window = self.progress, _Window(self.progress.train_seconds)
        interrupted = False
        with _StopFlag() as flag:
            while not self.done():
                if self.agree(flag.stop):
                    interrupted = True
                    break
                out = self.update()
                window.add(out)
                if p.step % self.config.log_interval == 0 or p.step == self.schedule.steps:
                    row = window.row(p, out["lr"], self.info.world_size)
                    p.history.append(row)
                    self.emit("on_log", row)
                    window = _Window(p.train_seconds)
                self.after_update()
            if p.step != self.last_saved and p.step > 0:
                self.save()
        return interrupted

    def done(self) -> bool:
        steps, budget = self.schedule.steps, self.config.time_budget
        return (steps is not None and self.progress.step >= steps) or (
            budget is not None and self.progress.train_seconds >= budget)

    def agree(self, flag: bool) -> bool:
        """Every rank stops at the same step if any rank was interrupted."""
        if not self.info.enabled:
            return flag
        return all_reduce_sum(int(flag), self.device) > 0

    def next_batch(self) -> Batch:
        """The sampler's next batch, resumable: its epoch and position live in ``progress``."""
        p, sampler, dataset = self.progress, self.loaders.train.batch_sampler, self.loaders.train.dataset
        while True:
            sampler.set_epoch(p.epoch)
            mine = list(iter(sampler))
            if p.position < len(mine):
                break
            p.epoch, p.position = p.epoch + 1, 0
        indices = mine[p.position]
        p.position += 1
        return collate([dataset[i] for i in indices]).to(self.device)

    def update(self) -> dict:
        """One optimiser step, timed (evaluation is not)."""
        start = time.perf_counter()
        batch = self.next_batch()
        global_tokens = int(all_reduce_sum(batch.tgt_tokens, self.device)) if self.info.enabled else None
        out = train_step(self.ddp, batch, self.loss_fn, self.optimizer, self.scheduler, self.run["clip_norm"],
                         global_tokens, self.info.world_size)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.progress.train_seconds += time.perf_counter() - start
        self.progress.step += 1
        return out

    def after_update(self) -> None:
        step = self.progress.step
        self.emit("on_step")
        with rng_kept():  # the weights must not depend on when the run evaluates or saves
            if step % self.schedule.eval_interval == 0 and self.info.is_main:
                self.emit("on_evaluate", self.validate())
            if step % self.schedule.checkpoint_interval == 0:
                self.save()

    def validate(self) -> dict:
        p = self.progress
        metrics = evaluate(self.model, self.loaders.validation, self.loaders.tgt_vocab, self.loss_fn,
                           device=self.device, max_examples=self.config.eval_examples)
        row = {"step": p.step, "train_seconds": round(p.train_seconds, 3)}
        row.update({f"val_{k}": v for k, v in metrics.items() if k not in ("samples", "examples")})
        p.history.append(row)
        return row

    def save(self) -> None:
        """A checkpoint of everything needed to continue exactly (only with an output directory)."""
        if self.files is None:
            return
        rngs = [rng_state()]
        if self.info.enabled:
            rngs = [None] * self.info.world_size
            torch.distributed.all_gather_object(rngs, rng_state())
        p = self.progress
        self.last_saved = p.step
        if not self.info.is_main:
            return
        state = dict(
            step=p.step, model=self.model.state_dict(), optimizer=self.optimizer.state_dict(),
            scheduler=self.scheduler.state_dict(), config=self.model_config.to_dict(),
            src_vocab=self.loaders.src_vocab.to_dict(), tgt_vocab=self.loaders.tgt_vocab.to_dict(), rng=rngs,
            run=self.run, train_seconds=p.train_seconds, sampler=dict(epoch=p.epoch, position=p.position),
            intervals=self.config.intervals(),
        )
        keep = max(self.config.keep_checkpoints, self.config.average_last)
        self.emit("on_checkpoint", self.files.save(state, keep, p.history))

    def finish(self, interrupted: bool) -> RunResult:
        """The result; unless interrupted, the test evaluation, the average and the summary."""
        p, loaders = self.progress, self.loaders
        result = RunResult(self.model, loaders.src_vocab, loaders.tgt_vocab, self.run, p.step, p.train_seconds,
                           interrupted, p.history, None if self.files is None else self.files.path,
                           data=loaders.data)
        if not interrupted and self.info.is_main:
            result.test = self.test()
            averaged = self.files.average_last(self.config.average_last) if self.files is not None else None
            if averaged is not None:
                self.model.load_state_dict(averaged["model"])
                result.averaged_steps, result.test_averaged = averaged["averaged_steps"], self.test()
            if self.files is not None:
                self.files.write_summary(result.summary())
        self.model.eval()
        return result

    def test(self) -> dict:
        with rng_kept():
            return _strip(evaluate(self.model, self.loaders.test, self.loaders.tgt_vocab, self.loss_fn,
                                   beam_size=self.config.beam_size, device=self.device))
