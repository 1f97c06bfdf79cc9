"""The options of a training run, their defaults and allowed values, as data.

:class:`RunConfig` is the one table of options: every field has its type, its default
(the paper's recipe, Section 5 of Vaswani et al., 2017) and a help line; the command line
is generated from it (``python -m transformer_lab.cli.train --help``), and it validates
itself once, when it is made. Options left at ``None`` take the preset's value from
``RECIPES``.

Toy runs are thousands of times shorter than the paper's 100,000 steps, so the ``tiny``
preset shortens the warm-up (100 steps) and halves equation (3) (``lr_factor=0.5``); the ``base`` and ``big``
presets keep the paper's 4,000 warm-up steps and factor 1.

The options in ``RUN_OPTIONS`` define a run (its data, model and optimisation) and are
saved in every checkpoint; a resumed run must agree with them (:meth:`RunConfig.conflicts`
lists each difference), and :meth:`RunConfig.from_run` rebuilds a config from them. The
others (``RESUMABLE``: how long, how often to evaluate and save, where) may change on
resume. The intervals of ``KEPT_ON_RESUME`` are saved too: a resumed run that is not
given them evaluates and saves as the run did before (:meth:`RunConfig.resumed_with`).
A run's weights never depend on them: evaluating and saving leave the random state as
they found it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from . import checks
from .data import TASKS
from .distributed import DEVICE_CHOICES
from .model import TransformerConfig

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
MODEL_OPTIONS = ("d_model", "num_layers", "num_heads", "d_ff", "dropout")
# The options that define a run: saved in its checkpoints, fixed for its whole life.
RUN_OPTIONS = ("task", "preset", "seed", "num_train", "num_eval", "max_tokens", "warmup_steps", "lr_factor",
               "label_smoothing", "clip_norm") + MODEL_OPTIONS
# How often a run evaluates and saves: saved in its checkpoints, and taken from there by a
# resumed run that leaves them at None (not given).
KEPT_ON_RESUME = ("eval_interval", "checkpoint_interval")

# The groups of the command line's --help, in order.
WHAT, HOW_LONG, OPTIMISATION, WHERE = "what to train", "how long", "optimisation (Section 5.3-5.4)", "where and how"


def recipe(preset: str, task: str) -> dict:
    """The defaults for ``preset`` on ``task``: warm-up, lr factor, token budget, steps."""
    checks.one_of("preset", preset, PRESETS)
    out = dict(RECIPES[preset])
    extra = TASK_RECIPES.get((preset, task), {})
    out["model"] = {**out["model"], **extra.get("model", {})}
    out.update({k: v for k, v in extra.items() if k != "model"})
    return out


def option(default, group: str, help: str):
    """A RunConfig field: its default, the --help group it appears in, and its help line."""
    return field(default=default, metadata={"group": group, "help": help})


@dataclass(frozen=True)
class RunConfig:
    """Everything a training run needs, validated on creation; see the module docstring.

    ``output_dir=None`` trains in memory and writes no file; with a directory the run
    writes checkpoints, ``metrics.jsonl`` and ``summary.json`` there, and can ``resume``.
    """

    task: str = option("copy", WHAT, f"one of: {', '.join(TASKS)}")
    preset: str = option("tiny", WHAT, f"model size, one of: {', '.join(PRESETS)}")
    seed: int = option(0, WHAT, "seeds the data, the initialisation and dropout")
    num_train: int = option(10_000, WHAT, "training examples to generate")
    num_eval: int = option(500, WHAT, "validation and test examples (each, at least 1)")
    d_model: int | None = option(None, WHAT, "override the preset's d_model")
    num_layers: int | None = option(None, WHAT, "override the preset's N")
    num_heads: int | None = option(None, WHAT, "override the preset's h")
    d_ff: int | None = option(None, WHAT, "override the preset's d_ff")
    dropout: float | None = option(None, WHAT, "P_drop (Section 5.4); default: the preset's (0.1 tiny/base)")
    steps: int | None = option(None, HOW_LONG, "number of updates (default: the preset's, unless a time budget)")
    time_budget: float | None = option(None, HOW_LONG, "seconds of training (evaluation not counted)")
    max_tokens: int | None = option(None, OPTIMISATION, "token budget per batch and side, padding included (5.1)")
    warmup_steps: int | None = option(None, OPTIMISATION, "warm-up steps of equation (3); paper: 4000")
    lr_factor: float | None = option(None, OPTIMISATION, "multiplies equation (3); paper: 1")
    label_smoothing: float = option(0.1, OPTIMISATION, "epsilon_ls (5.4)")
    clip_norm: float | None = option(None, OPTIMISATION, "clip the gradient's L2 norm (not in the paper)")
    device: str = option("auto", WHERE, f"one of: {', '.join(DEVICE_CHOICES)} (auto: cuda, mps, cpu)")
    output_dir: str | None = option(None, WHERE, "checkpoints, metrics.jsonl and summary.json (None: no file)")
    resume: bool = option(False, WHERE, "continue the run in the output directory from its latest checkpoint, with its options")
    eval_interval: int | None = option(None, WHERE, "evaluate on the validation split every N steps")
    eval_examples: int = option(500, WHERE, "validation examples decoded per evaluation")
    checkpoint_interval: int | None = option(None, WHERE, "save every N steps (default: the eval interval)")
    average_last: int = option(1, WHERE, "at the end, average the last k checkpoints (6.1: 5 for base, 20 for big)")
    keep_checkpoints: int = option(5, WHERE, "step checkpoints kept (at least the number averaged)")
    beam_size: int = option(1, WHERE, "final test evaluation: 1 = greedy, else beam search")
    log_interval: int = option(10, WHERE, "record the training loss every N steps")
    threads: int | None = option(None, WHERE, "torch.set_num_threads, at most the CPU cores available (more: capped, "
                                                "with a warning; default: 1 for the tiny preset on CPU, else PyTorch's)")
    deterministic: bool = option(False, WHERE, "torch.use_deterministic_algorithms(True)")

    def __post_init__(self):
        checks.one_of("task", self.task, TASKS)
        checks.one_of("preset", self.preset, PRESETS)
        checks.one_of("device", self.device, DEVICE_CHOICES)
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise TypeError(f"seed must be an int, got {type(self.seed).__name__}")
        for name in ("num_train", "num_eval", "eval_examples", "average_last", "keep_checkpoints", "beam_size",
                     "log_interval"):
            checks.positive_int(name, getattr(self, name))
        for name in ("steps", "max_tokens", "warmup_steps", "eval_interval", "checkpoint_interval", "d_model",
                     "num_layers", "num_heads", "d_ff", "threads"):
            if getattr(self, name) is not None:
                checks.positive_int(name, getattr(self, name))
        for name in ("time_budget", "lr_factor", "clip_norm"):
            if getattr(self, name) is not None:
                checks.positive_number(name, getattr(self, name))
        checks.fraction("label_smoothing", self.label_smoothing)
        if self.dropout is not None:
            checks.fraction("dropout", self.dropout)
        if self.output_dir is None and (self.resume or self.average_last > 1):
            raise ValueError(
                f"output_dir must be a directory when resume={self.resume} or average_last={self.average_last} "
                f"(both read checkpoints from it), got None"
            )

    def replace(self, **changes) -> "RunConfig":
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_run(cls, run: dict, **changes) -> "RunConfig":
        """The config of a saved run (:meth:`definition`'s dict, as each checkpoint holds
        it) with ``changes``: how a resumed run takes the options it was not given."""
        options = {name: run[name] for name in RUN_OPTIONS if name not in MODEL_OPTIONS}
        options.update(dropout=run["dropout"], **run["model_overrides"])
        return cls(**{**options, **changes})

    def intervals(self) -> dict:
        """The options of ``KEPT_ON_RESUME`` as given (``None``: the default), as a
        checkpoint saves them."""
        return {name: getattr(self, name) for name in KEPT_ON_RESUME}

    def resumed_with(self, saved: dict) -> "RunConfig":
        """This config, with each option of ``KEPT_ON_RESUME`` it leaves at ``None`` taken
        from ``saved`` (a checkpoint's ``intervals``; older checkpoints have none)."""
        if not isinstance(saved, dict):
            raise TypeError(f"saved must be a dict of intervals, got {type(saved).__name__}")
        kept = {name: saved[name] for name in KEPT_ON_RESUME if getattr(self, name) is None and name in saved}
        return self.replace(**kept) if kept else self

    def resolved(self) -> dict:
        """Every option of ``RUN_OPTIONS`` with the value this run uses: the preset's
        recipe and model sizes filled in."""
        run = self.definition()
        model = dict(run["model_overrides"], **({} if run["dropout"] is None else {"dropout": run["dropout"]}))
        sizes = getattr(TransformerConfig, run["preset"])(8, **model)  # any vocabulary: only sizes are read
        out = {name: run[name] for name in RUN_OPTIONS if name not in MODEL_OPTIONS}
        out.update({name: getattr(sizes, name) for name in MODEL_OPTIONS})
        return out

    def conflicts(self, run: dict) -> list[str]:
        """The options that define the run and differ from a saved run's (``run``, as in a
        checkpoint), each as ``"name=ours (checkpoint: theirs)"``; empty when none do."""
        ours, saved = self.resolved(), RunConfig.from_run(run).resolved()
        return [f"{name}={ours[name]!r} (checkpoint: {saved[name]!r})" for name in RUN_OPTIONS
                if ours[name] != saved[name]]

    def definition(self) -> dict:
        """What defines the run, with the preset's defaults filled in: saved in every
        checkpoint, and read back from there when a run resumes."""
        r = recipe(self.preset, self.task)
        overrides = dict(r["model"])
        overrides.update({name: getattr(self, name) for name in MODEL_OPTIONS if getattr(self, name) is not None})
        return dict(
            task=self.task, preset=self.preset, seed=self.seed,
            max_tokens=self.max_tokens or r["max_tokens"], num_train=self.num_train, num_eval=self.num_eval,
            warmup_steps=self.warmup_steps or r["warmup_steps"], lr_factor=self.lr_factor or r["lr_factor"],
            label_smoothing=self.label_smoothing, dropout=overrides.pop("dropout", None), clip_norm=self.clip_norm,
            model_overrides=overrides,
        )


# The options that may change when a run resumes: every one that does not define the run.
RESUMABLE = tuple(f.name for f in dataclasses.fields(RunConfig) if f.name not in RUN_OPTIONS + ("output_dir", "resume"))
