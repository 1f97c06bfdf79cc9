"""Train a Transformer on a generated task: ``python -m transformer_lab.cli.train --help``.

    python -m transformer_lab.cli.train --task dates --time-budget 60 --output-dir runs/dates
    python -m transformer_lab.cli.train --task dates --output-dir runs/dates --resume --steps 4000
    torchrun --nproc-per-node 2 -m transformer_lab.cli.train --task copy --device cpu ...

Every option is a field of :class:`transformer_lab.RunConfig`, which gives its type,
default and help line; this module parses the command line into one and calls
:func:`transformer_lab.fit` with a progress bar and a report on the console. The run
writes OUTPUT_DIR/checkpoints/step_*.pt (and averaged.pt), metrics.jsonl and
summary.json. Ctrl-C stops after the current step and saves a checkpoint (exit status
130); --resume continues exactly, with the options saved in the checkpoint: the options
given with it must agree with those, except the ones ``--help`` lists as free to change
(the evaluation and checkpoint intervals, when not given, are the run's).
Bad input, a directory in use or not writable, an unusable checkpoint, a full disk: a
one-line message and exit status 2. A warning (``--threads`` above the cores available,
which is capped) is one line ``warning: ...``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import typing
import warnings

from ..callbacks import ConsoleReport, ProgressBar
from ..run import fit
from ..run_config import KEPT_ON_RESUME, RESUMABLE, RunConfig
from ..run_files import RunDirectory, TrainError

DEFAULT_OUTPUT_DIR = "runs/run"


def _scalar(annotation) -> type:
    """``int`` from ``int | None``: the type argparse converts a value to."""
    kinds = [t for t in typing.get_args(annotation) if t is not type(None)]
    return kinds[0] if kinds else annotation


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def build_parser(defaults: bool = True) -> argparse.ArgumentParser:
    """One option per RunConfig field (``--time-budget`` for ``time_budget``), plus
    ``--no-progress``. ``defaults=False`` leaves out every option not on the command line
    (how :func:`parse` tells the options given from the defaults)."""
    p = argparse.ArgumentParser(
        prog="python -m transformer_lab.cli.train",
        description="Train a Transformer (Vaswani et al., 2017) on a generated toy translation task. "
        "Defaults follow the paper (Adam 0.9/0.98/1e-9, warm-up schedule, label smoothing 0.1, "
        "dropout 0.1); the tiny preset shortens the warm-up for runs of seconds.",
        epilog="--resume continues the run in --output-dir with the options saved in its checkpoint. Options given "
        "with --resume must agree with those, except these, which may change on resume: "
        + ", ".join(_flag(name) for name in RESUMABLE) + ". Of these, "
        + " and ".join(_flag(name) for name in KEPT_ON_RESUME) + " keep the run's values when not given. A run's "
        "weights do not depend on when it evaluates or saves, nor on an interruption and --resume.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    groups: dict[str, argparse._ArgumentGroup] = {}
    hints = typing.get_type_hints(RunConfig)
    for f in dataclasses.fields(RunConfig):
        group = groups.get(f.metadata["group"]) or groups.setdefault(
            f.metadata["group"], p.add_argument_group(f.metadata["group"]))
        flag, kind = _flag(f.name), _scalar(hints[f.name])
        default = f.default if defaults else argparse.SUPPRESS
        if kind is bool:
            group.add_argument(flag, action="store_true", default=default, help=f.metadata["help"])
        else:
            group.add_argument(flag, type=kind, default=default, help=f.metadata["help"])
    groups["where and how"].add_argument("--no-progress", action="store_true",
                                         help="no progress output (a bar on a terminal, else a line every 10 s and one per evaluation)")
    if defaults:
        p.set_defaults(output_dir=DEFAULT_OUTPUT_DIR)
    return p


def parse(argv: list[str] | None = None) -> tuple[RunConfig, bool]:
    """(the run's config, whether to show progress) from the command line. With
    ``--resume``, the options not given are the checkpoint's (``RunConfig.from_run``)."""
    options = vars(build_parser().parse_args(argv))
    progress = not options.pop("no_progress")
    if not options["resume"]:
        return RunConfig(**options), progress
    given = vars(build_parser(defaults=False).parse_args(argv))
    given.pop("no_progress", None)
    run = RunDirectory(options["output_dir"]).resume_state()["run"]
    try:
        RunConfig.from_run(run).resolved()  # the checkpoint's own options first, so an error blames the right one
    except (KeyError, TypeError, ValueError) as e:
        raise TrainError(f"cannot resume: the checkpoint in {options['output_dir']!r} holds an invalid run "
                         f"definition ({type(e).__name__}: {e})") from e
    return RunConfig.from_run(run, **{**given, "output_dir": options["output_dir"], "resume": True}), progress


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    with warnings.catch_warnings():  # restores warnings.showwarning afterwards
        warnings.showwarning = _warning_line  # a warning is one line, as an error is
        try:
            config, progress = parse(argv)
            result = fit(config, [ProgressBar(), ConsoleReport()] if progress else [ConsoleReport()])
        except (ValueError, TypeError, TrainError, FloatingPointError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    return 130 if result.interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
