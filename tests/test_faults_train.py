"""Training runs under faults: concurrent runs, conflicting resumes, unwritable or full
disks, unusable checkpoints, logs instead of terminals.

Each failure is one line, ``error: ...``, exit status 2 (``TrainError`` from Python), and
it comes before any training step where it can. Runs use deliberately tiny sizes.
"""

import fcntl
import io
import json
import os
import pty
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time

import pytest
import torch

import transformer_lab as tl
from fault_helpers import (
    SMALL,
    SMALL_ARGS,
    cli_command,
    cli_env,
    copy_run,
    one_line_error,
    rewrite_checkpoint,
    run_cli,
    train,
)
from transformer_lab import run as run_module
from transformer_lab.cli import train as train_cli


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A finished two-step run: step_00000001.pt, step_00000002.pt and averaged.pt."""
    out = tmp_path_factory.mktemp("trained") / "run"
    train(out, task="reverse", seed=3)
    return out


def main(capsys, *args) -> tuple[int, str, str]:
    status = train_cli.main([*SMALL_ARGS, "--no-progress", *map(str, args)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def files_of(run):
    return {p.relative_to(run).as_posix(): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


def wait_for(condition, timeout=90.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


# -- 1. gradient clipping ---------------------------------------------------------------


@pytest.mark.parametrize("value", ["-1", "0"])
def test_a_clip_norm_that_is_not_positive_is_refused_before_training(tmp_path, capsys, value):
    status, out, err = main(capsys, "--clip-norm", value, "--steps", "2", "--output-dir", tmp_path / "run")
    assert status == 2 and out == "" and not (tmp_path / "run").exists()
    assert one_line_error(err) == f"error: clip_norm must be positive and finite, got {float(value)}"


# -- 2. one run at a time in a directory ----------------------------------------------------


@pytest.mark.slow
def test_a_second_run_into_a_directory_in_use_is_refused_and_a_killed_run_blocks_nothing(tmp_path):
    out = tmp_path / "run"
    args = [*SMALL_ARGS, "--no-progress", "--task", "copy", "--output-dir", out]
    first = subprocess.Popen(cli_command("train", *args, "--steps", "100000", "--checkpoint-interval", "1",
                                         "--eval-interval", "100000"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env())
    try:
        wait_for(lambda: list((out / "checkpoints").glob("step_*.pt")) or first.poll() is not None)
        for extra in ([], ["--resume"]):  # a new run, and a resume of the run that is going on
            second = run_cli("train", *args, "--steps", "3", *extra)
            assert second.returncode == 2, second.stderr
            assert one_line_error(second.stderr).startswith(
                f"error: output_dir {str(out)!r} is in use by another training run (process {first.pid} on ")
    finally:
        first.send_signal(signal.SIGINT)  # Ctrl-C: the first run stops after its step and saves
        stdout, stderr = first.communicate(timeout=60)
    assert first.returncode == 130, stderr
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == sorted(steps)  # one run's rows, not two runs' interleaved

    killed = subprocess.Popen(cli_command("train", *args, "--resume", "--steps", "100000"), env=cli_env(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: f"process {killed.pid} " in (out / ".lock").read_text() or killed.poll() is not None)
    killed.kill()  # SIGKILL: no clean-up runs; the kernel drops the lock with the process
    killed.wait()
    after = run_cli("train", *args, "--resume", "--steps", str(max(steps) + 2))
    assert after.returncode == 0, after.stderr


@pytest.mark.slow
def test_of_two_runs_started_at_once_into_one_directory_one_is_refused(tmp_path):
    out = tmp_path / "run"
    command = cli_command("train", *SMALL_ARGS, "--no-progress", "--task", "copy", "--steps", "40",
                          "--threads", "1", "--eval-interval", "1000", "--output-dir", out)  # the only checkpoint comes at the end
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env())
            for _ in range(2)]
    results = [(run.pid, *run.communicate(timeout=300), run.returncode) for run in runs]
    assert sorted(r[3] for r in results) == [0, 2], results
    (winner, *_), (_, _, refusal, _) = sorted(results, key=lambda r: r[3])
    # Nearly always the second waits at the lock; if the machine delayed it until the
    # first had finished, it finds the first run's checkpoints instead. Either way: refused.
    assert one_line_error(refusal).startswith((
        f"error: output_dir {str(out)!r} is in use by another training run (process {winner} on ",
        f"error: {str(out)!r} already holds checkpoints"))
    assert json.loads((out / "summary.json").read_text())["step"] == 40


def test_a_run_in_process_is_refused_while_another_holds_the_directory(tmp_path, monkeypatch):
    trained_steps = []
    monkeypatch.setattr(run_module, "train_step", lambda *a, **k: trained_steps.append(1) or tl.train_step(*a, **k))
    with run_module.RunDirectory(tmp_path).claim():
        with pytest.raises(tl.TrainError, match=re.escape(f"output_dir {str(tmp_path)!r} is in use by another "
                                                          f"training run (process {os.getpid()} on ")):
            tl.fit(tl.RunConfig(**SMALL, task="copy", steps=2, output_dir=str(tmp_path)))
    assert trained_steps == [] and not list(tmp_path.glob("checkpoints/*.pt"))
    tl.fit(tl.RunConfig(**SMALL, task="copy", steps=2, output_dir=str(tmp_path)))  # released: free again


# -- 3. a resume must agree with the checkpoint's run -----------------------------------------


def test_resume_refuses_every_option_that_conflicts_with_the_checkpoint(trained, tmp_path, capsys):
    run = copy_run(trained, tmp_path / "run")
    before = files_of(run)
    status, out, err = main(capsys, "--resume", "--output-dir", run, "--steps", "4", "--task", "copy",
                            "--seed", "0", "--d-model", "32", "--label-smoothing", "0.0")
    line = one_line_error(err)
    assert status == 2 and out == ""
    assert line.startswith(f"error: cannot resume: 4 option(s) differ from the run in checkpoint "
                           f"{str(run / 'checkpoints' / 'step_00000002.pt')!r}: task='copy' (checkpoint: 'reverse'); "
                           f"seed=0 (checkpoint: 3); label_smoothing=0.0 (checkpoint: 0.1); d_model=32 "
                           f"(checkpoint: 16).")
    assert "only these may change on resume: steps, time_budget" in line
    assert files_of(run) == before


def test_resume_takes_the_options_left_out_from_the_checkpoint(trained, tmp_path, capsys):
    run = copy_run(trained, tmp_path / "run")
    status, out, err = main(capsys, "--resume", "--output-dir", run, "--steps", "4", "--task", "reverse")
    assert status == 0, err
    summary = json.loads((run / "summary.json").read_text())
    assert summary["step"] == 4 and (summary["run"]["task"], summary["run"]["seed"]) == ("reverse", 3)


def test_resume_from_python_compares_the_config_with_the_checkpoint(trained, tmp_path):
    run = copy_run(trained, tmp_path / "run")
    before = files_of(run)
    with pytest.raises(tl.TrainError, match=r"cannot resume: 2 option\(s\) differ .*: task='copy' \(checkpoint: "
                                            r"'reverse'\); seed=0 \(checkpoint: 3\)\."):
        tl.fit(tl.RunConfig(**SMALL, output_dir=str(run), resume=True, steps=4))
    assert files_of(run) == before
    same = tl.RunConfig.from_run(tl.load_checkpoint(run)["run"], output_dir=str(run), resume=True, steps=3,
                                 device="cpu")
    assert tl.fit(same).step == 3


def test_an_invalid_option_given_on_resume_is_blamed_on_the_option_not_the_checkpoint(trained, tmp_path):
    run = copy_run(trained, tmp_path / "run")
    config = tl.RunConfig(**{**SMALL, "d_model": 15}, task="reverse", seed=3, output_dir=str(run), resume=True,
                          steps=4)
    with pytest.raises(ValueError, match=r"^d_model=15 must be divisible by num_heads=2"):
        tl.fit(config)


def test_help_lists_the_options_that_may_change_on_resume():
    text = " ".join(train_cli.build_parser().format_help().split())
    assert ("Options given with --resume must agree with those, except these, which may change on resume: "
            "--steps, --time-budget, --device, --eval-interval, --eval-examples, --checkpoint-interval, "
            "--average-last, --keep-checkpoints, --beam-size, --log-interval, --threads, --deterministic.") in text


# -- where the run writes -----------------------------------------------------------------------


def test_an_output_dir_that_is_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "file").write_text("not a directory")
    status, out, err = main(capsys, "--steps", "2", "--output-dir", tmp_path / "file")
    assert status == 2
    assert one_line_error(err) == f"error: output_dir {str(tmp_path / 'file')!r} is a file, not a directory"


def test_an_unwritable_directory_stops_the_run_before_its_first_step(tmp_path, monkeypatch):
    """Simulated: file modes mean nothing to root, so creating the probe file fails here as
    it would on a read-only file system (the next test uses real permissions)."""
    trained_steps = []
    monkeypatch.setattr(run_module, "train_step", lambda *a, **k: trained_steps.append(1) or tl.train_step(*a, **k))

    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    with pytest.raises(tl.TrainError, match=re.escape(f"cannot write to {str(tmp_path)!r}: Read-only file system "
                                                      f"(checked before training; nothing was trained)")):
        tl.fit(tl.RunConfig(**SMALL, task="copy", steps=3, output_dir=str(tmp_path)))
    assert trained_steps == []


# Succeeds (exit 0) only if the package imports and writing into the read-only folder
# sys.argv[1] is refused: the two things the next test needs of the user it runs as.
ENFORCED_PROBE = """
import os, sys
import transformer_lab.cli.train
try:
    open(sys.argv[1] + "/probe", "w").close()
except PermissionError:
    sys.exit(0)
os.remove(sys.argv[1] + "/probe")
sys.exit("file modes are not enforced: it could write into a read-only folder")
"""
# Root ignores file modes through these capabilities; without them root is an ordinary owner.
DAC_CAPABILITIES = "-dac_override,-dac_read_search,-fowner"


def with_file_modes_enforced(read_only: str) -> list[str]:
    """The prefix that runs a command with file modes enforced: none for an ordinary user.
    Root (who ignores them) first drops the capabilities that override them, keeping its
    user, so the clone and its .venv stay reachable wherever they are (a private folder:
    mktemp -d, /root); else it runs as user nobody, who must then reach the interpreter and
    the code. The test is skipped, naming each reason, when neither can run it."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: cannot drop the permissions to test")
    candidates = {
        "root without the capabilities that override file modes":
            ["setpriv", f"--bounding-set={DAC_CAPABILITIES}", f"--inh-caps={DAC_CAPABILITIES}"],
        "user nobody": ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"],
    }
    reasons = []
    for who, prefix in candidates.items():
        probe = subprocess.run([*prefix, sys.executable, "-c", ENFORCED_PROBE, read_only], capture_output=True,
                               text=True, env=cli_env(), timeout=120)
        if probe.returncode == 0:
            return prefix
        reasons.append(f"{who}: {(probe.stderr.strip().splitlines() or ['exit status ' + str(probe.returncode)])[-1]}")
    pytest.skip("running as root, and no user to run the command line as with file modes enforced ("
                + "; ".join(reasons) + ")")


@pytest.mark.slow
def test_a_directory_without_write_permission_is_one_line_before_training(tmp_path):
    """Real permissions: as anyone but root, in a directory made read-only with chmod. Root
    (who ignores them) runs the command without the capabilities that let it, else as user
    nobody (see ``with_file_modes_enforced``)."""
    parent = tempfile.mkdtemp(prefix="faults-")  # /tmp: nobody can reach it, unlike pytest's tmp_path
    try:
        out = os.path.join(parent, "run")
        os.makedirs(out)
        os.chmod(parent, 0o755)
        os.chmod(out, 0o555)
        command = [*with_file_modes_enforced(out), *cli_command(
            "train", *SMALL_ARGS, "--no-progress", "--task", "copy", "--steps", "2", "--output-dir", out)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120,
                                env={**cli_env(), "HOME": parent})
        assert result.returncode == 2 and result.stdout == ""
        line = one_line_error(result.stderr)
        assert line.startswith(f"error: cannot write to output_dir {out!r}: Permission denied") or line.startswith(
            f"error: cannot write to {out!r}: Permission denied"), line
        assert os.listdir(out) == []
    finally:
        os.chmod(os.path.join(parent, "run"), 0o755)
        shutil.rmtree(parent)


@pytest.mark.slow
def test_a_full_disk_is_one_line_and_keeps_the_earlier_checkpoints(trained, tmp_path):
    """A real failed write: RLIMIT_FSIZE makes writing past 64 KiB fail (EFBIG, which Python
    reports instead of dying of SIGXFSZ), as a full disk does; torch says "unexpected pos"."""
    run = copy_run(trained, tmp_path / "run")
    before = files_of(run)
    limit = 64 * 1024  # a checkpoint of this model is about 130 KiB

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    result = subprocess.run(cli_command("train", *SMALL_ARGS, "--no-progress", "--resume", "--steps", "4",
                                        "--checkpoint-interval", "1", "--output-dir", run),
                            capture_output=True, text=True, env=cli_env(), timeout=120, preexec_fn=small_disk)
    assert result.returncode == 2, result.stderr
    line = one_line_error(result.stderr)
    assert line.startswith(f"error: cannot write checkpoint {str(run / 'checkpoints' / 'step_00000003.pt')!r} "
                           f"(is the disk full or read-only?): ")
    after = files_of(run)
    assert {k: v for k, v in after.items() if k != ".lock"} == {k: v for k, v in before.items() if k != ".lock"}


def test_a_metrics_file_that_cannot_be_written_is_a_train_error(tmp_path, monkeypatch):
    real_replace = os.replace

    def full(src, dst):
        if str(dst).endswith("metrics.jsonl"):
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(tl.TrainError, match=re.escape(f"cannot write {str(tmp_path / 'metrics.jsonl')!r} (is the "
                                                      f"disk full or read-only?): No space left on device")):
        tl.fit(tl.RunConfig(**SMALL, task="copy", steps=2, output_dir=str(tmp_path)))
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


# -- checkpoints a run cannot resume from ----------------------------------------------------


def test_a_directory_with_only_the_averaged_model_cannot_resume(trained, tmp_path, capsys):
    run = copy_run(trained, tmp_path / "run")
    for p in (run / "checkpoints").glob("step_*.pt"):
        p.unlink()
    status, out, err = main(capsys, "--resume", "--steps", "4", "--output-dir", run)
    assert status == 2
    assert one_line_error(err) == (
        f"error: cannot resume: checkpoint {str(run / 'checkpoints' / 'step_*.pt')!r} does not exist (the directory "
        f"holds only averaged.pt, a model for evaluation without the optimizer's state)")


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.pop("optimizer"), "lacks optimizer, which a run needs to continue"),
    (lambda s: s.pop("run"), "lacks run, which a run needs to continue"),
    (lambda s: s["model"].update({"X" + k: s["model"].pop(k) for k in list(s["model"])[3:4]}),
     "does not fit this run: RuntimeError: Error(s) in loading state_dict for Transformer"),
    (lambda s: s["config"].update(d_model=32), "does not fit this run: ValueError: its model config differs"),
    (lambda s: s.update(src_vocab={"x": 1}), "does not fit this run: ValueError: state must be a dict with keys"),
    (lambda s: s["optimizer"]["param_groups"].append({}), "does not fit this run: ValueError: "),
    (lambda s: s.update(intervals={"eval_interval": 0}),
     "holds invalid intervals: ValueError: eval_interval must be a positive int, got 0"),
])
def test_a_checkpoint_that_cannot_be_resumed_is_one_line(trained, tmp_path, capsys, edit, message):
    run = copy_run(trained, tmp_path / "run")
    latest = rewrite_checkpoint(run / "checkpoints" / "step_00000002.pt", edit)
    status, out, err = main(capsys, "--resume", "--steps", "4", "--output-dir", run)
    assert status == 2
    assert one_line_error(err).startswith(f"error: cannot resume: checkpoint {str(latest)!r} {message}")


def test_a_checkpoint_with_an_invalid_run_definition_is_one_line(trained, tmp_path, capsys):
    run = copy_run(trained, tmp_path / "run")
    rewrite_checkpoint(run / "checkpoints" / "step_00000002.pt", lambda s: s["run"].update(preset="huge"))
    status, out, err = main(capsys, "--resume", "--steps", "4", "--output-dir", run)
    assert status == 2
    assert one_line_error(err) == (f"error: cannot resume: the checkpoint in {str(run)!r} holds an invalid run "
                                   f"definition (ValueError: preset must be one of ('tiny', 'base', 'big'), got "
                                   f"'huge')")
    with pytest.raises(tl.TrainError, match="holds an invalid run definition: ValueError: preset must be one of"):
        tl.fit(tl.RunConfig(**SMALL, output_dir=str(run), resume=True, steps=4))


# -- threads: more than the cores available ---------------------------------------------------------


def capped(threads: int, cores: int) -> str:
    return (f"threads={threads} is more than the {cores} CPU core(s) available to this process; using {cores} "
            f"(more threads than cores slow every step down)")


def test_more_threads_than_cores_are_capped_with_a_warning():
    cores, before = len(os.sched_getaffinity(0)), torch.get_num_threads()
    try:
        with pytest.warns(RuntimeWarning) as caught:
            result = tl.fit(tl.RunConfig(**SMALL, task="copy", steps=2, threads=cores + 3))
        assert torch.get_num_threads() == cores
    finally:
        torch.set_num_threads(before)
    assert [str(w.message) for w in caught] == [capped(cores + 3, cores)]
    assert result.step == 2


@pytest.mark.slow
def test_the_command_line_caps_threads_in_one_warning_line(tmp_path):
    """The issue's case: --threads 10000 on 2 cores took 123 s for three steps, silently."""
    cores = len(os.sched_getaffinity(0))
    result = run_cli("train", *SMALL_ARGS, "--no-progress", "--task", "copy", "--steps", "3", "--threads", "10000",
                     "--output-dir", tmp_path / "run", timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [f"warning: {capped(10000, cores)}"]
    assert result.stdout.startswith("test (20 examples, step 3, ")


# -- progress: a bar on a terminal, lines in a log -------------------------------------------------


def fit_with(progress_bar, tmp_path):
    tl.fit(tl.RunConfig(**SMALL, task="copy", steps=4, eval_interval=2, log_interval=1), [progress_bar])


def test_progress_in_a_log_is_one_line_per_evaluation(tmp_path):
    log = io.StringIO()
    fit_with(tl.ProgressBar(file=log), tmp_path)
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    # one line per evaluation; between them, plain progress lines (the first step, then at
    # most one every 10 s: issue 22, a log must show progress), never a carriage-return bar
    evals = [line for line in lines if ": val loss " in line]
    assert len(evals) == 2
    assert evals[0].startswith("step 2: val loss ") and evals[1].startswith("step 4: val loss ")
    others = [line for line in lines if line not in evals]
    assert others and all(re.match(r"step \d+/4: loss ", line) for line in others), others


def test_progress_on_a_terminal_is_a_bar(tmp_path):
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 24 rows, 100 columns
    with os.fdopen(terminal, "w") as tty:
        fit_with(tl.ProgressBar(file=tty), tmp_path)
    text = os.read(controller, 1 << 16).decode()
    os.close(controller)
    assert "\r" in text and "4/4" in text and "step 2: val loss" in text


@pytest.mark.slow
def test_the_command_line_piped_into_a_log_writes_no_bar(tmp_path):
    result = run_cli("train", *SMALL_ARGS, "--task", "copy", "--steps", "6", "--eval-interval", "2",
                     "--output-dir", tmp_path / "run")
    assert result.returncode == 0, result.stderr
    assert "\r" not in result.stderr
    lines = result.stderr.splitlines()
    assert [line.split(":")[0] for line in lines if ": val loss " in line] == ["step 2", "step 4", "step 6"]
    assert all(re.match(r"step \d+(/6: loss |: val loss )", line) for line in lines), lines
