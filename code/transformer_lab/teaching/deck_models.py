"""The trained models the deck shows, defined once: the slides and the tests import them.

    pronoun = tt.pronoun_model()        # a RunResult: model, vocabularies, metrics, data
    result = tt.dates_model()
    tt.DATES_MODEL.config.steps         # 300: what the slide says comes from here

Each is a :class:`DeckModel`: a cache name, the ``RunConfig`` it trains with and how many
of its last checkpoints are averaged (Section 6.1). :meth:`DeckModel.result` goes through
:func:`~transformer_lab.teaching.cache.cached`, so every chapter (each in a kernel of its
own) and every test gets the same trained model, trained once per package source; two
processes asking at once train it once (the second waits and loads it).
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass

import torch

from ..run import RunResult, Schedule, fit
from ..run_config import RunConfig
from .cache import cached


@dataclass(frozen=True)
class DeckModel:
    """A model the deck trains: ``name`` (its cache name), ``config`` (the run, in memory)
    and ``average_last`` (average the last k checkpoints at the end; above 1 the run
    writes its checkpoints into a temporary directory, removed afterwards, so the
    result's ``output_dir`` names a directory that no longer exists)."""

    name: str
    config: RunConfig
    average_last: int = 1

    def __post_init__(self):
        if not isinstance(self.config, RunConfig):
            raise TypeError(f"config must be a RunConfig, got {type(self.config).__name__}")
        if self.config.steps is None or self.config.time_budget is not None:
            raise ValueError(f"config must stop after a number of steps, not a time budget (the same model on "
                             f"every machine), got steps={self.config.steps}, time_budget={self.config.time_budget}")
        if self.config.output_dir is not None:
            raise ValueError(f"config.output_dir must be None (a deck model trains into a temporary "
                             f"directory), got {self.config.output_dir!r}")
        if not isinstance(self.average_last, int) or isinstance(self.average_last, bool) or self.average_last < 1:
            raise ValueError(f"average_last must be a positive int, got {self.average_last!r}")

    def train(self) -> RunResult:
        """Train it now (no cache). PyTorch's thread count is left as it was, as on a
        cache hit: ``fit`` sets it to ``config.threads``."""
        threads = torch.get_num_threads()
        try:
            if self.average_last == 1:
                return fit(self.config)
            with tempfile.TemporaryDirectory(prefix=f"{self.name}-") as run_dir:
                return fit(self.config.replace(output_dir=run_dir, average_last=self.average_last))
        finally:
            torch.set_num_threads(threads)

    def with_seed(self, seed: int) -> "DeckModel":
        """The same run from another seed (its data, initialisation and batches): the claims
        matrix trains the deck's models on seeds 0 to 4 (``benchmarks/claims_matrix.py``)."""
        if seed == self.config.seed:
            return self
        return dataclasses.replace(self, config=self.config.replace(seed=seed))

    def result(self) -> RunResult:
        """The trained model, from the cache (:func:`cached`) or trained now."""
        return cached(self.name, self.train, inputs={"config": self.config, "average_last": self.average_last})

    def facts(self) -> list[str]:
        """The run's settings that a slide states, each as a short phrase in markdown
        (a slide joins them into a line or a table; never a repr)."""
        c = self.config
        run = c.definition()
        every = Schedule.of(c, run).eval_interval
        facts = [f"`{c.task}` task, seed {c.seed}",
                 f"{c.steps:,} steps, batches of at most {run['max_tokens']:,} tokens",
                 f"{c.num_train:,} training examples"]
        if every <= c.steps:  # else the run never validates
            facts.append(f"{min(c.eval_examples, c.num_eval):,} validation examples every {every} steps")
        facts.append(f"{c.num_eval:,} test examples")
        if self.average_last > 1:
            facts.append(f"the last {self.average_last} checkpoints averaged")
        return facts


# The deck's kernels run PyTorch on one thread (slides/index.qmd), and so do these runs.
PRONOUN_MODEL = DeckModel(
    "pronoun-model", RunConfig(task="pronoun", steps=150, num_train=3000, num_eval=400, seed=0, threads=1))
DATES_MODEL = DeckModel(
    "dates-model", RunConfig(task="dates", steps=300, eval_interval=25, eval_examples=200, seed=0, threads=1),
    average_last=5)


def pronoun_model() -> RunResult:
    """The pronoun model of chapters 06, 11a and 20 (the explorer)."""
    return PRONOUN_MODEL.result()


def dates_model() -> RunResult:
    """The dates model of chapters 14, 15 and 20 (the explorer)."""
    return DATES_MODEL.result()


#: The deck's running example: one sentence traced through the whole model, from its
#: tokens to the beam (the pronoun model's task; the explorer opens on it too).
RUNNING_SENTENCE = "the cat did not cross the road because it was too tired"
#: The same sentence with the one word that changes its answer ("it" is the road).
CONTRAST_SENTENCE = "the cat did not cross the road because it was too wide"


# ------------------------------------------------------------------ the deck's timings
# Measured on the machine that builds the deck (one thread, as its kernels run), kept in
# the cache like the models (keyed by the package, PyTorch and the CPU kernels): the slides
# and their claims (tt.deck_claims) read the same numbers.

#: Table 1's slide: sequence lengths n timed at d = 512.
TABLE1_LENGTHS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)
TABLE1_D_MODEL = 512


def table1_times() -> dict[str, list[float]]:
    """Median milliseconds of the attention layer, the attention core and a GRU at each
    of :data:`TABLE1_LENGTHS` (:func:`~.scaling.attention_vs_recurrence`, 5 repeats)."""
    from .scaling import attention_vs_recurrence

    lengths = list(TABLE1_LENGTHS)
    return cached("table1-times", lambda: attention_vs_recurrence(lengths, d_model=TABLE1_D_MODEL),
                  inputs={"lengths": lengths, "d_model": TABLE1_D_MODEL, "repeats": 5, "threads": 1})


#: The key/value cache slide: a tiny model (256 steps, with and without the cache) and a
#: model of the base widths with 1 layer (1,024 cached steps), a 64-token source.
KV_TINY_STEPS, KV_BASE_STEPS, KV_SOURCE = 256, 1024, 64


def _step_times(config, n: int, cache: bool, runs: int) -> list[float]:
    from ..model import Transformer
    from .speed import decode_step_times

    torch.manual_seed(0)  # tt.cached restores the random state
    model, src = Transformer(config).eval(), torch.randint(4, 100, (1, KV_SOURCE))  # (1, S)
    decode_step_times(model, src, 8, use_cache=cache)  # warm-up
    return [min(t) for t in zip(*(decode_step_times(model, src, n, use_cache=cache) for _ in range(runs)))]


def kv_step_times() -> dict[str, dict[str, list[float]]]:
    """Milliseconds per greedy decoding step, each step the fastest of its runs:
    ``{"tiny (d = 64)": {"with cache": [...], "recompute": [...]},
    "base size (d = 512, 1 layer)": {"with cache": [...]}}``."""
    from ..model import TransformerConfig

    tiny = TransformerConfig.tiny(100, max_len=512)
    base = TransformerConfig.base(100, num_layers=1, max_len=1100)

    def run(config, n, cache, runs=3):
        return cached("kv-steps", lambda: _step_times(config, n, cache, runs),
                      inputs={"c": config, "n": n, "cache": cache, "runs": runs})
    return {"tiny (d = 64)": {"with cache": run(tiny, KV_TINY_STEPS, True),
                              "recompute": run(tiny, KV_TINY_STEPS, False)},
            "base size (d = 512, 1 layer)": {"with cache": run(base, KV_BASE_STEPS, True, runs=1)}}


#: The appendix's attention paths: causal fwd + bwd at these lengths.
PATH_LENGTHS = (128, 256, 512, 1024)
PATH_SIZES = {"heads": 8, "d_k": 64, "batch": 2, "repeats": 3}


def attention_path_times() -> dict[str, list[float]]:
    """Milliseconds of the explicit path, our fused path and PyTorch's SDPA at each of
    :data:`PATH_LENGTHS` (:func:`~.speed.attention_paths`)."""
    from .speed import attention_paths

    lengths = list(PATH_LENGTHS)
    return cached("attention-paths", lambda: attention_paths(lengths, **PATH_SIZES),
                  inputs={"lengths": lengths, **PATH_SIZES})


#: The speed slide's benchmark: ``benchmarks/bench_speed.py`` at medium sizes on one thread
#: of the CPU, 11 interleaved rounds, ours against PyTorch's own modules.
SPEED_ARGS = ("--deck", "--device", "cpu", "--threads", "1", "--rounds", "11")


def speed_against_pytorch() -> dict:
    """``bench_speed.py``'s JSON (rows of ours / PyTorch, the machine's name, threads,
    rounds), run in a subprocess of its own and cached by the script's source and
    arguments (the package's source and the kernels key it too)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_speed.py"

    def measure():
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "speed.json"
            subprocess.run([sys.executable, str(bench), *SPEED_ARGS, "--json", str(out)], check=True,
                           capture_output=True)
            return json.loads(out.read_text())
    return cached("speed", measure, inputs={"bench": bench.read_text(), "args": list(SPEED_ARGS)})


#: The dropout slide: the tiny model on 100 training dates, without dropout and with the
#: base model's P_drop (Section 5.4), like for like (:mod:`.dropout`).
DROPOUT_RATES = (0.0, 0.1)


def dropout_curves(seed: int = 0) -> list[dict]:
    """The dropout slide's runs (:func:`~.dropout.dropout_runs` with
    :data:`~.dropout.DROPOUT_SETTINGS`, rates :data:`DROPOUT_RATES`), trained once per
    package source and kernels (about 10 s of one thread here) and cached."""
    from .dropout import DROPOUT_SETTINGS, dropout_runs

    return cached("dropout-runs", lambda: dropout_runs(DROPOUT_RATES, seed=seed),
                  inputs={"seed": seed, "rates": list(DROPOUT_RATES), **DROPOUT_SETTINGS})
