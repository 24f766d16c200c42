"""attograd.models and attograd.training: the command's run from Python (keys as keyword
arguments, the same run folder), resume, a model loaded and sampled, and Ctrl-C stopping a run
as it stops the command."""

import json
import os
import signal
import subprocess
import sys

import pytest

import attograd
from attograd import models, training

TEXT = "the quick brown fox jumps over the lazy dog.\nto be or not to be.\n" * 40
SMALL = dict(layers=1, heads=2, embd=16, block=16, batch=4, eval_iters=1, sample_tokens=0, quiet=True)


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT)
    return path


def test_train_writes_the_commands_run_folder_and_resumes(corpus, tmp_path):
    out = tmp_path / "run"
    s = training.train(data=corpus, out=out, iters=12, eval_every=6, **SMALL)
    assert s["iters"] == 12 and s["val_loss"] > 0 and not s["interrupted"]
    for f in ("model.safetensors", "metrics.jsonl", "config.toml", "train_state.safetensors"):
        assert (out / f).exists(), f
    assert "iters = 12" in (out / "config.toml").read_text()
    assert training.resume(out, iters=18, quiet=True)["iters"] == 18
    with pytest.raises(ValueError, match="a resumed run keeps its saved value"):
        training.resume(out, lr=0.5)


@pytest.mark.parametrize("gemm, provider_before", [("auto", "openblas"), ("auto", "onednn"),
                                                    ("openblas", "onednn"), ("onednn", "openblas")])
def test_the_same_keys_write_the_same_run_folder_as_the_command(corpus, tmp_path, monkeypatch, capsys, gemm,
                                                               provider_before):
    # ctest names the program it built; outside ctest there may be none to compare with.
    cli = os.environ.get("ATTOGRAD_CLI")
    if not cli:
        pytest.skip("ATTOGRAD_CLI (the attograd program) is not set; ctest sets it")
    for name in {gemm, provider_before} - {"auto"}:
        if attograd.backends.gemm_providers()[name] is not None:
            pytest.skip(f"{name} does not run here")
    # The command and Python run the same OpenBLAS kernels (tuning/openblas_kernels.h),
    # and --gemm auto (the default of both) resolves the same way in both: one kept timing (the
    # command keeps it, training.train reads it), whichever provider the session had set before.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    keys = dict(iters=6, eval_every=3, layers=1, heads=2, embd=16, block=16, batch=4, eval_iters=1,
                sample_tokens=0, threads=1, gemm=gemm)
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in keys.items()]
    cli_log = subprocess.run([cli, "train", "--data", str(corpus), "--out", str(tmp_path / "cli")] + flags,
                             check=True, stdout=subprocess.PIPE, text=True).stdout
    before = attograd.backends.get_gemm_provider()
    attograd.backends.set_gemm_provider(provider_before)
    capsys.readouterr()
    try:
        training.train(data=corpus, out=tmp_path / "py", **keys)
    finally:
        attograd.backends.set_gemm_provider(before)
    py_log = capsys.readouterr().out

    def gemm_line(log):
        found = [line for line in log.splitlines() if line.startswith("gemm: ")]
        assert len(found) == 1, log
        return found[0]

    if gemm == "auto":  # the command measured and kept; Python read what it kept
        kept_in = f", kept in {tmp_path / 'cache' / 'attograd' / 'peak_flops.json'})"
        assert gemm_line(cli_log).endswith(f"(measured now{kept_in}"), cli_log
        assert gemm_line(py_log) == gemm_line(cli_log).replace(f"(measured now{kept_in}", "(kept)")
    else:
        assert gemm_line(py_log) == gemm_line(cli_log) and gemm_line(py_log).endswith(f", --gemm {gemm}")
    cli_dir, py_dir = tmp_path / "cli", tmp_path / "py"
    assert sorted(os.listdir(cli_dir)) == sorted(os.listdir(py_dir))
    config = [(d / "config.toml").read_text().replace(str(d), "OUT") for d in (cli_dir, py_dir)]
    assert config[0] == config[1]
    assert (cli_dir / "model.safetensors").read_bytes() == (py_dir / "model.safetensors").read_bytes()

    def losses(d):
        rows = [json.loads(line) for line in (d / "metrics.jsonl").read_text().splitlines()]
        return [(r["iter"], r["train_loss"], r["val_loss"]) for r in rows]

    assert losses(cli_dir) == losses(py_dir) and len(losses(py_dir)) >= 3


def test_callbacks_see_every_step_and_evaluation_and_can_stop_the_run(corpus, tmp_path):
    steps, evals = [], []
    training.train(data=corpus, out=tmp_path / "run", iters=6, eval_every=3, on_step=steps.append,
                   on_eval=evals.append, **SMALL)
    assert [s["iter"] for s in steps] == [1, 2, 3, 4, 5, 6] and all(s["loss"] > 0 for s in steps)
    assert [e["iter"] for e in evals] == [0, 3, 6]

    def stop(step):
        if step["iter"] == 2:
            raise StopIteration("enough")

    with pytest.raises(StopIteration, match="enough"):
        training.train(data=corpus, out=tmp_path / "run2", iters=6, on_step=stop, **SMALL)


def test_bad_keys_are_refused_by_name(corpus, tmp_path):
    with pytest.raises(TypeError, match="unexpected keyword argument 'itters'"):
        training.train(data=corpus, out=tmp_path / "r", itters=3)
    with pytest.raises(ValueError, match="iters must be"):
        training.train(data=corpus, out=tmp_path / "r", iters=-3)
    with pytest.raises(ValueError, match="unknown model 'nope'"):
        training.train(data=corpus, out=tmp_path / "r", model="nope")
    assert training.keys()["min-lr"][0] == "0.0001"


def test_load_sample_save_and_train_from_python(corpus, tmp_path):
    training.train(data=corpus, out=tmp_path / "run", iters=5, **SMALL)
    m = models.load(tmp_path / "run")
    assert m.config["n_embd"] == 16 and not m.training and m.vocab == sorted(set(TEXT))
    text = m.generate("the ", max_new_tokens=20, seed=3)
    assert len(text) == 20 and text == m.generate("the ", max_new_tokens=20, seed=3)
    with pytest.raises(RuntimeError, match="'Z' .* is not in the vocabulary"):
        m.generate("Z")
    m.save(tmp_path / "m.safetensors")
    again = models.load(tmp_path / "m.safetensors")
    assert all(attograd.equal(p, q) for p, q in zip(m.parameters(), again.parameters()))
    ids = attograd.tensor([m.encode(TEXT[:17])])
    opt = attograd.optim.AdamW(m.parameters(), lr=1e-2)
    m.train()
    first = m.loss(ids[:, :-1], ids[:, 1:]).item()
    for _ in range(5):
        opt.zero_grad()
        m.loss(ids[:, :-1], ids[:, 1:]).backward()
        opt.step()
    assert m.loss(ids[:, :-1], ids[:, 1:]).item() < first
    assert m(ids[:, :-1]).shape == (1, 16, len(m.vocab))
    with pytest.raises(FileNotFoundError):
        models.load(tmp_path / "nothing")


def test_ctrl_c_stops_the_run_with_a_checkpoint(corpus, tmp_path):
    code = (f"import attograd\n"
            f"attograd.training.train(data={str(corpus)!r}, out={str(tmp_path / 'run')!r}, iters=10**7, "
            f"eval_every=10**7, log_every=20, layers=1, heads=2, embd=16, block=16, batch=4, sample_tokens=0, "
            f"no_progress=True)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in p.stdout:  # the run is stepping once it logs a step
        if line.startswith("iter"):
            break
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode != 0 and "KeyboardInterrupt: the run stopped after iter" in err, err
    assert "interrupted (signal 2)" in out
    assert os.path.exists(tmp_path / "run" / "train_state.safetensors")
