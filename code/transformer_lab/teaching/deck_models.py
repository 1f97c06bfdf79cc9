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
