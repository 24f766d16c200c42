"""Hardening, class 7: paths outside Unicode's Basic Multilingual Plane (an emoji) given to
attograd.training. The keyword arguments become the run's TOML configuration; a path goes in as
UTF-8 text (JSON's escapes wrote an emoji as a surrogate pair, which TOML refuses, so the run
failed with a message naming neither the key nor the path). The command line takes the same
paths; a name with bytes that are not UTF-8 has no TOML spelling and is refused naming the key."""

import os
import subprocess

import pytest

from attograd import training

TEXT = "the quick brown fox jumps over the lazy dog.\nto be or not to be.\n" * 40
SMALL = dict(layers=1, heads=2, embd=16, block=16, batch=4, eval_iters=1, sample_tokens=0, quiet=True)


def test_emoji_paths_train_and_resume(tmp_path):
    folder = tmp_path / "data \U0001F600 \u00e9"
    folder.mkdir()
    data = folder / "c\U0001F30D rpus.txt"
    data.write_text(TEXT)
    out = tmp_path / "run \U0001F389"
    s = training.train(data=data, out=out, iters=4, eval_every=2, **SMALL)
    assert s["iters"] == 4 and s["out_dir"] == str(out)
    config = (out / "config.toml").read_text(encoding="utf-8")
    assert str(data) in config
    assert training.resume(out, iters=6, data=os.fsencode(data), quiet=True)["iters"] == 6


def test_the_command_line_takes_the_same_path(tmp_path):
    cli = os.environ.get("ATTOGRAD_CLI")
    if not cli:
        pytest.skip("ATTOGRAD_CLI (the attograd program) is not set; ctest sets it")
    data = tmp_path / "\U0001F600.txt"
    data.write_text(TEXT)
    keys = dict(iters=2, layers=1, heads=2, embd=16, block=16, batch=4, eval_iters=1, sample_tokens=0)
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in keys.items()]
    subprocess.run([cli, "train", "--data", str(data), "--out", str(tmp_path / "cli \U0001F389")] + flags, check=True,
                   stdout=subprocess.DEVNULL)
    training.train(data=data, out=tmp_path / "py \U0001F389", quiet=True, **keys)
    assert (tmp_path / "cli \U0001F389" / "config.toml").exists() and (tmp_path / "py \U0001F389" / "config.toml").exists()


def test_quotes_backslashes_and_control_characters_survive(tmp_path):
    folder = tmp_path / 'a "quoted" \\ back\tslash'
    folder.mkdir()
    data = folder / "c.txt"
    data.write_text(TEXT)
    assert training.train(data=data, out=folder / "run", iters=2, **SMALL)["iters"] == 2


def test_a_name_that_is_not_utf8_is_refused_naming_the_key(tmp_path):
    bad = os.fsdecode(os.fsencode(str(tmp_path)) + b"/corpus\xff.txt")
    with pytest.raises(ValueError, match=r"train\(\): data=.*not UTF-8"):
        training.train(data=bad, out=tmp_path / "run", iters=2, **SMALL)
    with pytest.raises(ValueError, match=r"train\(\): out=.*not UTF-8"):
        training.resume(bad)
