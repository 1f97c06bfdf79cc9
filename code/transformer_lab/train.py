"""Train a Transformer on a generated task: ``python -m transformer_lab.train --help``.

The paper's recipe is the default (Section 5 of Vaswani et al., 2017): Adam with beta1 0.9,
beta2 0.98, eps 1e-9 (5.3), the warm-up learning-rate schedule of equation (3) (5.3),
label smoothing 0.1 and dropout 0.1 (5.4), batches bucketed by length under a token budget
(5.1), and averaging of the last checkpoints (6.1). Gradient clipping (``--clip-norm``) is
an option the paper does not use.

Toy runs are thousands of times shorter than the paper's 100,000 steps, so the ``tiny``
preset shortens the warm-up and raises the schedule's factor (see ``RECIPES``); the ``base``
and ``big`` presets keep the paper's 4,000 warm-up steps and factor 1.

    python -m transformer_lab.train --task dates --time-budget 60 --output-dir runs/dates
    python -m transformer_lab.train --task dates --output-dir runs/dates --resume --steps 4000
    torchrun --nproc-per-node 2 -m transformer_lab.train --task copy --device cpu ...

Writes ``OUTPUT_DIR/checkpoints/step_*.pt`` (and ``averaged.pt``), ``metrics.jsonl`` (one
JSON object per log line: training loss, learning rate, tokens/s; validation loss, token
accuracy, exact match, BLEU) and ``summary.json`` (the test-set evaluation). Ctrl-C stops
after the current step and saves a checkpoint; ``--resume`` continues exactly.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.nn.parallel import DistributedDataParallel

from .checkpoint import (
    AVERAGED_NAME,
    CheckpointError,
    average_checkpoints,
    checkpoint_name,
    list_checkpoints,
    load_checkpoint,
    prune_checkpoints,
    resolve_checkpoint,
    rng_state,
    save_checkpoint,
    set_rng_state,
)
from .data import TASKS, Vocabulary, collate, make_loaders
from .distributed import (
    DEVICE_CHOICES,
    all_reduce_sum,
    barrier,
    env_dist_info,
    init_distributed,
    resolve_device,
    shutdown_distributed,
)
from .evaluation import evaluate
from .model import Transformer, TransformerConfig
from .training import LabelSmoothingLoss, WarmupSchedule, make_optimizer, train_step

PRESETS = ("tiny", "base", "big")

# Training defaults per preset, then per (preset, task). The paper's values for base and
# big (Sections 5.1-5.3: 4000 warm-up steps, factor 1, ~25,000 tokens per batch); the tiny
# preset is tuned to solve the toy tasks in seconds on a 2-core CPU (README: "Training
# and translating").
RECIPES: dict[str, dict] = {
    "tiny": dict(warmup_steps=100, lr_factor=0.5, max_tokens=2048, steps=1500, eval_interval=200, model={}),
    "base": dict(warmup_steps=4000, lr_factor=1.0, max_tokens=25000, steps=100_000, eval_interval=1000, model={}),
    "big": dict(warmup_steps=4000, lr_factor=1.0, max_tokens=25000, steps=300_000, eval_interval=1000, model={}),
}
TASK_RECIPES: dict[tuple[str, str], dict] = {
    # Copying needs one cross-attention hop per token: one layer and smaller batches (more
    # updates per second) reach 100% on held-out data fastest.
    ("tiny", "copy"): dict(max_tokens=1024, model=dict(num_layers=1)),
}

RUN_KEYS = ("task", "preset", "seed", "max_tokens", "num_train", "num_eval", "warmup_steps", "lr_factor",
            "label_smoothing", "dropout", "clip_norm", "model_overrides")


class TrainError(RuntimeError):
    """A training run that cannot start (its message says why)."""


def recipe(preset: str, task: str) -> dict:
    """The defaults for ``preset`` on ``task``: warm-up, lr factor, token budget, steps."""
    if preset not in RECIPES:
        raise ValueError(f"unknown preset {preset!r}; valid presets: {', '.join(PRESETS)}")
    out = dict(RECIPES[preset])
    extra = TASK_RECIPES.get((preset, task), {})
    out["model"] = {**out["model"], **extra.get("model", {})}
    out.update({k: v for k, v in extra.items() if k != "model"})
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m transformer_lab.train",
        description="Train a Transformer (Vaswani et al., 2017) on a generated toy translation task. "
        "Defaults follow the paper (Adam 0.9/0.98/1e-9, warm-up schedule, label smoothing 0.1, "
        "dropout 0.1); the tiny preset shortens the warm-up for runs of seconds.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    g = p.add_argument_group("what to train")
    g.add_argument("--task", default="copy", help=f"one of: {', '.join(TASKS)}")
    g.add_argument("--preset", default="tiny", help=f"model size, one of: {', '.join(PRESETS)}")
    g.add_argument("--seed", type=int, default=0, help="seeds the data, the initialisation and dropout")
    g.add_argument("--num-train", type=int, default=10_000, help="training examples to generate")
    g.add_argument("--num-eval", type=int, default=500, help="validation and test examples (each)")
    g.add_argument("--d-model", type=int, help="override the preset's d_model")
    g.add_argument("--num-layers", type=int, help="override the preset's N")
    g.add_argument("--num-heads", type=int, help="override the preset's h")
    g.add_argument("--d-ff", type=int, help="override the preset's d_ff")
    g.add_argument("--dropout", type=float, help="P_drop (Section 5.4); default: the preset's (0.1 tiny/base)")
    g = p.add_argument_group("how long")
    g.add_argument("--steps", type=int, help="number of updates (default: the preset's, unless --time-budget)")
    g.add_argument("--time-budget", type=float, help="seconds of training (evaluation not counted)")
    g = p.add_argument_group("optimisation (Section 5.3-5.4)")
    g.add_argument("--max-tokens", type=int, help="token budget per batch and side, padding included (5.1)")
    g.add_argument("--warmup-steps", type=int, help="warm-up steps of equation (3); paper: 4000")
    g.add_argument("--lr-factor", type=float, help="multiplies equation (3); paper: 1")
    g.add_argument("--label-smoothing", type=float, default=0.1, help="epsilon_ls (5.4)")
    g.add_argument("--clip-norm", type=float, help="clip the gradient's L2 norm (not in the paper)")
    g = p.add_argument_group("where and how")
    g.add_argument("--device", default="auto", help=f"one of: {', '.join(DEVICE_CHOICES)} (auto: cuda, mps, cpu)")
    g.add_argument("--output-dir", default="runs/run", help="checkpoints, metrics.jsonl and summary.json")
    g.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --output-dir")
    g.add_argument("--eval-interval", type=int, help="evaluate on the validation split every N steps")
    g.add_argument("--eval-examples", type=int, default=500, help="validation examples decoded per evaluation")
    g.add_argument("--checkpoint-interval", type=int, help="save every N steps (default: --eval-interval)")
    g.add_argument("--average-last", type=int, default=1,
                   help="at the end, average the last k checkpoints (6.1: 5 for base, 20 for big)")
    g.add_argument("--keep-checkpoints", type=int, default=5, help="step checkpoints kept (at least --average-last)")
    g.add_argument("--beam-size", type=int, default=1, help="final test evaluation: 1 = greedy, else beam search")
    g.add_argument("--log-interval", type=int, default=10, help="write the training loss every N steps")
    g.add_argument("--threads", type=int, help="torch.set_num_threads (default: PyTorch's)")
    g.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    g.add_argument("--deterministic", action="store_true", help="torch.use_deterministic_algorithms(True)")
    return p


def check_args(args: argparse.Namespace) -> None:
    """Bad names list the valid ones; bad numbers say what was expected."""
    if args.task not in TASKS:
        raise ValueError(f"unknown task {args.task!r}; valid tasks: {', '.join(TASKS)}")
    if args.preset not in PRESETS:
        raise ValueError(f"unknown preset {args.preset!r}; valid presets: {', '.join(PRESETS)}")
    if args.device not in DEVICE_CHOICES:
        raise ValueError(f"unknown device {args.device!r}; valid devices: {', '.join(DEVICE_CHOICES)}")
    for name in ("steps", "max_tokens", "warmup_steps", "eval_interval", "checkpoint_interval", "d_model",
                 "num_layers", "num_heads", "d_ff", "threads"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be a positive int, got {value}")
    for name in ("average_last", "keep_checkpoints", "beam_size", "log_interval", "num_train", "eval_examples"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be a positive int, got {getattr(args, name)}")
    if args.time_budget is not None and not args.time_budget > 0:
        raise ValueError(f"--time-budget must be a positive number of seconds, got {args.time_budget}")
    if args.lr_factor is not None and not args.lr_factor > 0:
        raise ValueError(f"--lr-factor must be positive, got {args.lr_factor}")


def run_options(args: argparse.Namespace) -> dict:
    """What defines a run (saved in checkpoints; ``--resume`` takes them from there)."""
    r = recipe(args.preset, args.task)
    overrides = dict(r["model"])
    for name in ("d_model", "num_layers", "num_heads", "d_ff", "dropout"):
        if getattr(args, name) is not None:
            overrides[name] = getattr(args, name)
    return dict(
        task=args.task, preset=args.preset, seed=args.seed,
        max_tokens=args.max_tokens or r["max_tokens"], num_train=args.num_train, num_eval=args.num_eval,
        warmup_steps=args.warmup_steps or r["warmup_steps"], lr_factor=args.lr_factor or r["lr_factor"],
        label_smoothing=args.label_smoothing, dropout=overrides.pop("dropout", None), clip_norm=args.clip_norm,
        model_overrides=overrides,
    )


def model_config(run: dict, src_vocab: Vocabulary, tgt_vocab: Vocabulary) -> TransformerConfig:
    make = getattr(TransformerConfig, run["preset"])
    overrides = dict(run["model_overrides"])
    if run["dropout"] is not None:
        overrides["dropout"] = run["dropout"]
    shared = src_vocab == tgt_vocab
    return make(len(src_vocab), len(tgt_vocab), **{"shared_vocab": shared, **overrides})


@dataclass
class Progress:
    """Where the run stands: updates done, the sampler's epoch and position in it."""

    step: int = 0
    epoch: int = 0
    position: int = 0
    train_seconds: float = 0.0
    history: list = field(default_factory=list)


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


def _read_history(path: Path, up_to_step: int) -> list[dict]:
    if not path.is_file():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if r.get("step", 0) <= up_to_step]


def _write_history(path: Path, rows: list[dict]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tmp.replace(path)


def fit(args: argparse.Namespace) -> dict:
    """Run training as the command line describes; returns the summary dict."""
    check_args(args)
    info = env_dist_info()
    device = resolve_device(args.device, info.local_rank)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.deterministic:
        torch.use_deterministic_algorithms(True)
    out_dir = Path(args.output_dir)
    ckpt_dir = out_dir / "checkpoints"

    state = None
    if args.resume:
        try:
            state = load_checkpoint(resolve_checkpoint(ckpt_dir))
        except CheckpointError as e:
            raise TrainError(f"cannot resume: {e}") from e
        run = dict(state["run"])
    else:
        if list_checkpoints(ckpt_dir) or (ckpt_dir / AVERAGED_NAME).exists():
            raise TrainError(
                f"{str(out_dir)!r} already holds checkpoints; pass --resume to continue that run "
                f"or choose another --output-dir (nothing was overwritten)"
            )
        run = run_options(args)
    r = recipe(run["preset"], run["task"])
    steps = args.steps if args.steps is not None else (None if args.time_budget else r["steps"])
    eval_interval = args.eval_interval or r["eval_interval"]
    ckpt_interval = args.checkpoint_interval or eval_interval

    init_distributed(info, device)
    try:
        return _fit(args, run, state, info, device, out_dir, ckpt_dir, steps, eval_interval, ckpt_interval)
    finally:
        shutdown_distributed()


def _fit(args, run, state, info, device, out_dir, ckpt_dir, steps, eval_interval, ckpt_interval) -> dict:
    random.seed(run["seed"])
    torch.manual_seed(run["seed"])
    loaders = make_loaders(
        run["task"], seed=run["seed"], max_tokens=run["max_tokens"], num_train=run["num_train"],
        num_validation=run["num_eval"], num_test=run["num_eval"], num_replicas=info.world_size, rank=info.rank,
    )
    src_vocab, tgt_vocab = loaders.src_vocab, loaders.tgt_vocab
    config = model_config(run, src_vocab, tgt_vocab)
    model = Transformer(config).to(device)  # same initialisation on every rank (same seed)
    optimizer = make_optimizer(model)
    scheduler = WarmupSchedule(optimizer, config.d_model, run["warmup_steps"], run["lr_factor"])
    loss_fn = LabelSmoothingLoss(run["label_smoothing"], ignore_index=config.pad_id)
    progress = Progress()
    torch.manual_seed(run["seed"] + 1 + info.rank)  # dropout differs between ranks
    if state is not None:
        if state["config"] != config.to_dict():
            raise TrainError(f"checkpoint {state['path']!r} has a different model config from this run")
        if Vocabulary.from_dict(state["src_vocab"]) != src_vocab or Vocabulary.from_dict(state["tgt_vocab"]) != tgt_vocab:
            raise TrainError(f"checkpoint {state['path']!r} has different vocabularies from the generated data")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        rngs = state["rng"]
        set_rng_state(rngs[info.rank % len(rngs)])
        progress = Progress(state["step"], state["sampler"]["epoch"], state["sampler"]["position"],
                            state.get("train_seconds", 0.0))
    if info.is_main:
        out_dir.mkdir(parents=True, exist_ok=True)
        progress.history = _read_history(out_dir / "metrics.jsonl", progress.step)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None) \
        if info.enabled else model

    sampler, dataset = loaders.train.batch_sampler, loaders.train.dataset

    def next_batch():
        while True:
            sampler.set_epoch(progress.epoch)
            mine = list(iter(sampler))
            if progress.position < len(mine):
                break
            progress.epoch, progress.position = progress.epoch + 1, 0
        indices = mine[progress.position]
        progress.position += 1
        return collate([dataset[i] for i in indices]).to(device)

    def save(step: int) -> None:
        rngs = [rng_state()]
        if info.enabled:
            rngs = [None] * info.world_size
            torch.distributed.all_gather_object(rngs, rng_state())
        if not info.is_main:
            return
        save_checkpoint(dict(
            step=step, model=model.state_dict(), optimizer=optimizer.state_dict(),
            scheduler=scheduler.state_dict(), config=config.to_dict(), src_vocab=src_vocab.to_dict(),
            tgt_vocab=tgt_vocab.to_dict(), rng=rngs, run=run, train_seconds=progress.train_seconds,
            sampler=dict(epoch=progress.epoch, position=progress.position),
        ), ckpt_dir / checkpoint_name(step))
        prune_checkpoints(ckpt_dir, max(args.keep_checkpoints, args.average_last))
        _write_history(out_dir / "metrics.jsonl", progress.history)

    def validate() -> dict:
        metrics = evaluate(model, loaders.validation, tgt_vocab, loss_fn, device=device,
                           max_examples=args.eval_examples)
        row = {"step": progress.step, "train_seconds": round(progress.train_seconds, 3)}
        row.update({f"val_{k}": v for k, v in metrics.items() if k not in ("samples", "examples")})
        progress.history.append(row)
        return row

    bar = None
    if info.is_main and not args.no_progress:
        from tqdm import tqdm

        bar = tqdm(total=steps, initial=progress.step, unit="step", dynamic_ncols=True,
                   desc=f"{run['task']} ({run['preset']})")
    interrupted = False
    window_loss = window_tokens = window_n = 0
    window_start = progress.train_seconds
    last_saved = progress.step if state is not None else -1
    with _StopFlag() as flag:
        while True:
            if steps is not None and progress.step >= steps:
                break
            if args.time_budget is not None and progress.train_seconds >= args.time_budget:
                break
            if _agree(flag.stop, device, info):
                interrupted = True
                break
            start = time.perf_counter()
            batch = next_batch()
            global_tokens = int(all_reduce_sum(batch.tgt_tokens, device)) if info.enabled else None
            out = train_step(ddp, batch, loss_fn, optimizer, scheduler, run["clip_norm"],
                             global_tokens, info.world_size)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            progress.train_seconds += time.perf_counter() - start
            progress.step += 1
            window_loss += out["loss"] * out["tokens"]
            window_tokens += out["tokens"]
            window_n += 1
            if progress.step % args.log_interval == 0 or progress.step == steps:
                seconds = max(progress.train_seconds - window_start, 1e-9)
                row = {"step": progress.step, "loss": window_loss / max(window_tokens, 1), "lr": out["lr"],
                       "tokens_per_s": window_tokens * info.world_size / seconds,
                       "train_seconds": round(progress.train_seconds, 3)}
                progress.history.append(row)
                if bar is not None:
                    bar.set_postfix(loss=f"{row['loss']:.3f}", lr=f"{row['lr']:.2e}",
                                    tok_s=f"{row['tokens_per_s']:.0f}")
                window_loss = window_tokens = window_n = 0
                window_start = progress.train_seconds
            if bar is not None:
                bar.update(1)
            if progress.step % eval_interval == 0 and info.is_main:
                row = validate()
                if bar is not None:
                    bar.write(f"step {progress.step}: val loss {row['val_loss']:.3f}, token acc "
                              f"{row['val_token_accuracy']:.3f}, exact {row['val_exact_match']:.3f}, "
                              f"BLEU {row['val_bleu']:.1f} ({progress.train_seconds:.1f} s of training)")
            if progress.step % ckpt_interval == 0:
                save(progress.step)
                last_saved = progress.step
        if progress.step != last_saved and progress.step > 0:
            save(progress.step)
    if bar is not None:
        bar.close()
    barrier()
    summary = {"step": progress.step, "train_seconds": progress.train_seconds, "interrupted": interrupted,
               "output_dir": str(out_dir), "run": run}
    if interrupted:
        if info.is_main:
            print(f"interrupted: saved step {progress.step} in {ckpt_dir}; continue with --resume", file=sys.stderr)
        return summary
    if info.is_main:
        summary["test"] = _strip(evaluate(model, loaders.test, tgt_vocab, loss_fn, beam_size=args.beam_size,
                                          device=device))
        found = list_checkpoints(ckpt_dir)
        if args.average_last > 1 and len(found) >= 2:
            paths = found[-args.average_last:]
            averaged = average_checkpoints(paths)
            save_checkpoint(averaged, ckpt_dir / AVERAGED_NAME)
            model.load_state_dict(averaged["model"])
            summary["averaged_steps"] = averaged["averaged_steps"]
            summary["test_averaged"] = _strip(evaluate(model, loaders.test, tgt_vocab, loss_fn,
                                                       beam_size=args.beam_size, device=device))
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        t = summary["test"]
        print(f"test ({t['examples']} examples, step {progress.step}, {progress.train_seconds:.1f} s of "
              f"training): token accuracy {t['token_accuracy']:.4f}, exact match {t['exact_match']:.4f}, "
              f"BLEU {t['bleu']:.2f}")
        if "test_averaged" in summary:
            t = summary["test_averaged"]
            print(f"test, average of steps {summary['averaged_steps']}: token accuracy "
                  f"{t['token_accuracy']:.4f}, exact match {t['exact_match']:.4f}, BLEU {t['bleu']:.2f}")
    return summary


def _agree(flag: bool, device, info) -> bool:
    """Every rank stops at the same step if any rank was interrupted."""
    if not info.enabled:
        return flag
    return all_reduce_sum(int(flag), device) > 0


def _strip(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k != "samples"} | {"samples": [list(s) for s in metrics["samples"]]}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        summary = fit(args)
    except (ValueError, TrainError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 130 if summary.get("interrupted") else 0


if __name__ == "__main__":
    sys.exit(main())
