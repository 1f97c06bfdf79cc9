"""The on-disk cache of expensive results (trained models, timings) for the deck."""

from dataclasses import dataclass

import pytest
import torch

from transformer_lab.teaching import cache


@pytest.fixture
def cache_dir(tmp_path):
    cache.set_cache_directory(tmp_path)
    yield tmp_path
    cache.set_cache_directory(None)


def counting(value):
    calls = []

    def compute():
        calls.append(1)
        return value

    return compute, calls


def test_a_second_call_with_the_same_inputs_does_not_compute_again(cache_dir):
    compute, calls = counting({"accuracy": 0.97, "weights": torch.arange(4.0)})
    first = cache.cached("run", compute, inputs={"seed": 0, "steps": 10})
    second = cache.cached("run", compute, inputs={"steps": 10, "seed": 0})
    assert len(calls) == 1
    assert second["accuracy"] == first["accuracy"]
    torch.testing.assert_close(second["weights"], torch.arange(4.0))


@pytest.mark.parametrize("other", [{"seed": 1, "steps": 10}, {"seed": 0, "steps": 11}, {"seed": 0}])
def test_different_inputs_compute_again(cache_dir, other):
    compute, calls = counting(1)
    cache.cached("run", compute, inputs={"seed": 0, "steps": 10})
    cache.cached("run", compute, inputs=other)
    assert len(calls) == 2


def test_dataclasses_and_tensors_are_part_of_the_key(cache_dir):
    @dataclass(frozen=True)
    class Config:
        d_model: int

    assert cache.cache_key("m", {"c": Config(64)}) != cache.cache_key("m", {"c": Config(32)})
    assert cache.cache_key("m", {"t": torch.zeros(3)}) != cache.cache_key("m", {"t": torch.ones(3)})
    assert cache.cache_key("m", {"t": torch.zeros(3)}) == cache.cache_key("m", {"t": torch.zeros(3)})


def test_a_change_to_the_package_source_is_a_miss(cache_dir, monkeypatch):
    key = cache.cache_key("run", {"seed": 0})
    monkeypatch.setattr(cache, "package_digest", lambda: "edited")
    assert cache.cache_key("run", {"seed": 0}) != key


def test_an_unreadable_file_is_computed_again_with_a_warning(cache_dir):
    compute, calls = counting(5)
    cache.cached("run", compute, inputs={})
    (file,) = cache_dir.glob("run-*.pt")
    file.write_bytes(b"truncated")
    with pytest.warns(UserWarning, match="unreadable"):
        assert cache.cached("run", compute, inputs={}) == 5
    assert len(calls) == 2
    assert cache.cached("run", compute, inputs={}) == 5 and len(calls) == 2


def test_writes_leave_no_temporary_files(cache_dir):
    cache.cached("run", lambda: 1, inputs={})
    assert [p.name for p in cache_dir.iterdir() if p.name.startswith(".")] == []


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="name must be"):
        cache.cache_key("../x", {})
    with pytest.raises(TypeError, match="inputs must hold .* got object"):
        cache.cache_key("x", {"o": object()})
    with pytest.raises(TypeError, match="inputs must be a dict, got list"):
        cache.cached("x", lambda: 1, inputs=[1])


def test_the_directory_comes_from_the_environment(monkeypatch, tmp_path):
    cache.set_cache_directory(None)
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "c"))
    assert cache.cache_directory() == tmp_path / "c"


def test_code_after_a_cached_call_draws_the_same_numbers_on_a_hit_and_a_miss(cache_dir):
    """A miss computes (here: draws 1000 numbers from each generator), a hit reads a file;
    the numbers drawn after the call are the same either way."""
    import random

    import numpy as np

    def compute():
        random.random(), np.random.rand(1000), torch.rand(1000)
        return 1

    def after_call():
        random.seed(3), np.random.seed(3), torch.manual_seed(3)
        assert cache.cached("draws", compute, inputs={}) == 1
        return random.random(), float(np.random.rand()), float(torch.rand(()))

    miss, hit = after_call(), after_call()
    assert miss == hit
    random.seed(3), np.random.seed(3), torch.manual_seed(3)
    assert miss == (random.random(), float(np.random.rand()), float(torch.rand(())))


def test_the_lock_is_removed_once_the_result_is_written(cache_dir):
    cache.cached("run", lambda: 1, inputs={"seed": 0})
    assert [p.suffix for p in cache_dir.iterdir()] == [".pt"]


# --------------------------------------------------------------------------- two processes
# Chapters build in kernels of their own, side by side, and several ask for the same trained
# model: the second must wait for the first and load its result, not compute it again.

ASK = """
import json, pathlib, sys, time
from transformer_lab.teaching import cache

here, who, wait = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "wait"

def compute():
    (here / f"{who}.computing").touch()
    while wait and not (here / "release").exists():  # hold the lock until the test says so
        time.sleep(0.02)
    with open(here / "computed", "a") as log:
        log.write(who)
    return {"by": who}

(here / f"{who}.asking").touch()
print(json.dumps(cache.cached("slow", compute, inputs={})))
"""


def ask(tmp_path, who, wait):
    import os
    import subprocess
    import sys

    env = dict(os.environ, TL_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.Popen([sys.executable, "-c", ASK, str(tmp_path), who, "wait" if wait else "no"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(path, process, seconds=60):
    import time

    deadline = time.monotonic() + seconds
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path.name} did not appear"
        time.sleep(0.02)


def answer(process):
    import json

    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return json.loads(out)


@pytest.mark.slow
def test_a_second_process_waits_for_the_first_and_loads_its_result(tmp_path):
    import time

    first = ask(tmp_path, "first", wait=True)
    wait_for(tmp_path / "first.computing", first)
    second = ask(tmp_path, "second", wait=False)  # would compute at once if it did not wait
    wait_for(tmp_path / "second.asking", second)
    time.sleep(1.0)
    assert second.poll() is None and not (tmp_path / "second.computing").exists()
    (tmp_path / "release").touch()
    assert answer(first) == answer(second) == {"by": "first"}
    assert (tmp_path / "computed").read_text() == "first"
    assert [p.suffix for p in (tmp_path / "cache").iterdir()] == [".pt"]


@pytest.mark.slow
def test_a_process_that_dies_while_computing_leaves_the_computation_to_the_next(tmp_path):
    import time

    first = ask(tmp_path, "first", wait=True)
    wait_for(tmp_path / "first.computing", first)
    second = ask(tmp_path, "second", wait=False)
    wait_for(tmp_path / "second.asking", second)
    time.sleep(0.5)
    first.kill()  # SIGKILL: no clean-up runs, the kernel drops its lock
    first.communicate()
    assert answer(second) == {"by": "second"}
    assert (tmp_path / "computed").read_text() == "second"
    assert [p.suffix for p in (tmp_path / "cache").iterdir()] == [".pt"]


# --------------------------------------------------------------------------- plain data only
# A cache folder can travel with the project: what it holds is read as data, never run.

class _CreatesMarker:
    """Unpickling this runs ``Path.touch(marker)``: the attack a pickle in a shared folder is."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import pathlib

        return pathlib.Path.touch, (pathlib.Path(self.marker),)


def test_a_pickle_with_code_at_the_cache_path_is_never_run_and_is_computed_again(cache_dir, tmp_path):
    compute, calls = counting({"ms": [1.5, 2.5]})
    cache.cached("times", compute, inputs={"n": 3})
    (file,) = cache_dir.glob("times-*.pt")
    marker = tmp_path / "ran"
    torch.save({"format": cache.FORMAT, "value": _CreatesMarker(marker)}, file)
    planted = file.read_bytes()
    with pytest.raises(Exception):  # the file does hold code: an unrestricted load would run it
        torch.load(file, weights_only=True)
    assert not marker.exists()
    with pytest.warns(UserWarning, match=r"cached result .*times-.*\.pt is unreadable \(.*without running"):
        assert cache.cached("times", compute, inputs={"n": 3}) == {"ms": [1.5, 2.5]}
    assert not marker.exists()
    assert len(calls) == 2
    assert cache.cached("times", compute, inputs={"n": 3}) == {"ms": [1.5, 2.5]} and len(calls) == 2
    assert file.read_bytes() != planted  # replaced by the result computed again
    (tmp_path / "planted.pt").write_bytes(planted)
    torch.load(tmp_path / "planted.pt", weights_only=False)  # an unrestricted load does run its code
    assert marker.exists()


def test_plain_data_keeps_its_types(cache_dir):
    value = {"list": [1, 2.5, "a", None, True], "tuple": (1, (2, 3)), 4: torch.ones(2, dtype=torch.int64)}
    cache.cached("plain", lambda: value, inputs={})
    back = cache.cached("plain", lambda: None, inputs={})
    assert back["list"] == [1, 2.5, "a", None, True] and back["tuple"] == (1, (2, 3))
    assert type(back["tuple"]) is tuple and type(back["tuple"][1]) is tuple
    assert torch.equal(back[4], value[4]) and back[4].dtype == torch.int64


def test_a_file_of_another_shape_is_computed_again(cache_dir):
    compute, calls = counting(7)
    cache.cached("run", compute, inputs={})
    (file,) = cache_dir.glob("run-*.pt")
    torch.save({"weights": torch.zeros(2)}, file)  # plain data, but not what cached writes
    with pytest.warns(UserWarning, match="unreadable .*expected format"):
        assert cache.cached("run", compute, inputs={}) == 7
    assert len(calls) == 2


def test_weights_that_do_not_fit_the_stored_config_are_computed_again(cache_dir):
    import transformer_lab as tl

    model = tl.Transformer(tl.TransformerConfig.tiny(12))
    cache.cached("model", lambda: model, inputs={})
    (file,) = cache_dir.glob("model-*.pt")
    stored = torch.load(file, weights_only=True)
    stored["value"]["config"]["fields"]["d_model"] = 32  # the weights are of d_model 64
    torch.save(stored, file)
    with pytest.warns(UserWarning, match="unreadable .*size mismatch"):
        again = cache.cached("model", lambda: model, inputs={})
    assert again is model


def test_a_value_of_a_type_with_no_encoding_is_refused_when_stored(cache_dir):
    class Timing:
        pass

    with pytest.raises(TypeError, match=r"cached result 'timing' holds a .*Timing, which the cache cannot store"):
        cache.cached("timing", lambda: {"rows": [Timing()]}, inputs={})
    with pytest.raises(TypeError, match=r"cached result 'arr' holds a numpy.ndarray"):
        import numpy as np

        cache.cached("arr", lambda: np.zeros(2), inputs={})
    with pytest.raises(TypeError, match=r"cached result 'keys' has a dict key .* of type tuple"):
        cache.cached("keys", lambda: {(1, 2): 3}, inputs={})
    assert list(cache_dir.glob("*.pt")) == []


def test_a_transformer_built_with_variant_parts_is_refused(cache_dir):
    import transformer_lab as tl
    from torch import nn

    class Identity(nn.Module):
        def __init__(self, config):
            super().__init__()

        def forward(self, x):
            return x

    model = tl.Transformer(tl.TransformerConfig.tiny(12), feed_forward=Identity)
    with pytest.raises(TypeError, match="variant parts"):
        cache.cached("variant", lambda: model, inputs={})


def test_a_run_result_comes_back_the_same(cache_dir):
    from transformer_lab.run import RunResult, fit
    from transformer_lab.run_config import RunConfig

    config = RunConfig(task="copy", steps=4, num_train=64, num_eval=16, seed=0, threads=1)
    trained = cache.cached("tiny-run", lambda: fit(config), inputs={"config": config})
    loaded = cache.cached("tiny-run", lambda: pytest.fail("computed twice"), inputs={"config": config})
    assert type(loaded) is RunResult and loaded is not trained
    assert type(loaded.model) is type(trained.model) and not loaded.model.training
    assert loaded.model.config == trained.model.config
    src = torch.tensor([trained.src_vocab.encode(trained.data.test[0][0])])
    tgt = torch.tensor([[1] + trained.tgt_vocab.encode(trained.data.test[0][1])[:-1]])
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(src, tgt), trained.model(src, tgt), rtol=0, atol=0)
    if trained.model.config.tie_embeddings:  # the tied matrix is still one tensor
        assert loaded.model.output_projection.weight is loaded.model.tgt_embed.weight
    assert loaded.src_vocab == trained.src_vocab and loaded.tgt_vocab == trained.tgt_vocab
    assert loaded.src_vocab.itos == trained.src_vocab.itos
    assert (loaded.test, loaded.history, loaded.run) == (trained.test, trained.history, trained.run)
    assert loaded.test is not None and loaded.history
    assert (loaded.step, loaded.train_seconds, loaded.interrupted) == (trained.step, trained.train_seconds,
                                                                      trained.interrupted)
    assert (loaded.output_dir, loaded.averaged_steps, loaded.test_averaged) == (
        trained.output_dir, trained.averaged_steps, trained.test_averaged)
    assert loaded.data == trained.data
    assert loaded.data.test and type(loaded.data.test[0]) is type(trained.data.test[0])
