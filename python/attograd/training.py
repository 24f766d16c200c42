"""Training from Python: ``attograd train`` itself (train::train_lm), its keys as keyword
arguments, writing the same run folder (model.safetensors, metrics.jsonl, config.toml,
train_state.safetensors, ...). The keys are the TOML keys of ``attograd train --config`` (the
command's flags): ``train(data="input.txt", out="runs/x", iters=200, layers=2)``; a key with a
dash takes an underscore in Python (``min_lr=1e-4``, ``eval_every=50``). The run releases the
GIL; its lines go to ``sys.stdout``. Ctrl-C (a notebook's interrupt) stops it as it stops the
command: the step finishes, a checkpoint is written, and KeyboardInterrupt is raised after."""

import json
import math
import os

from . import _C

__all__ = ["train", "resume", "keys"]


def keys():
    """Every key: {key: (default, help)}, in the command's order."""
    return {flag: (default, help) for flag, _, help, _, default in _C._train_fields()}


def _toml(settings):
    known = {flag: on_resume for flag, _, _, on_resume, _ in _C._train_fields()}
    lines = []
    for key, value in settings.items():
        flag = key.replace("_", "-")
        if flag not in known:
            close = [k for k in known if k.replace("-", "") == flag.replace("-", "")]
            raise TypeError(f"train() got an unexpected keyword argument '{key}'"
                            + (f" (did you mean {close[0].replace('-', '_')}?)" if close else ""))
        lines.append(f"{json.dumps(flag)} = {_toml_value(key, value)}")
    return "\n".join(lines) + "\n", known


def _toml_value(key, value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (str, bytes, os.PathLike)):
        return _toml_string(_path_text(key, value))
    raise TypeError(f"train(): {key} takes a number, a bool or a string, not {type(value).__name__}")


def _path_text(key, value):
    """A str or path as the UTF-8 text the run's configuration holds, or ValueError naming the key
    and the path: a name with bytes that are not UTF-8 (Python shows them as surrogates, from
    os.fsdecode) has no TOML spelling."""
    text = os.fspath(value)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"train(): {key}={text!r}: the name holds bytes that are not UTF-8, which the run's "
                         "configuration (TOML, UTF-8 text) cannot carry; rename it, or link it under a UTF-8 name") from None
    return text


def _toml_string(text):
    """A TOML basic string: UTF-8 as it is, any character outside the Basic Multilingual Plane
    included (JSON would escape one as a surrogate pair, which TOML refuses), with TOML's escapes
    for the quote, the backslash and control characters."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _finish(summary):
    if summary["interrupted"]:
        raise KeyboardInterrupt(f"the run stopped after iter {summary['iters']}; its checkpoint is in "
                                f"{summary['out_dir']} (attograd.training.resume({summary['out_dir']!r}))")
    return summary


def train(config=None, *, quiet=False, on_step=None, on_eval=None, **settings):
    """Runs ``attograd train`` with these keys (on top of the TOML file ``config`` if given) and
    returns the summary: iters, train_loss, val_loss, seconds, tokens_per_s, sample, out_dir.
    ``on_step(dict)`` is called after every step (iter, loss, lr, grad_norm, tokens_per_s, ...),
    ``on_eval(dict)`` after every evaluation (iter, train_loss, val_loss, ...): a live curve;
    an exception they raise stops the run with it."""
    text, _ = _toml(settings)
    config = _path_text("config", config) if config is not None else ""
    return _finish(_C._train(config, text, quiet, on_step, on_eval))


def resume(out, *, quiet=False, on_step=None, on_eval=None, **settings):
    """Continues the run in ``out`` exactly (``attograd train --resume``); only the keys the
    command accepts with --resume may be given (data, iters, threads, ...)."""
    text, known = _toml(settings)
    for key in settings:
        if known[key.replace("_", "-")] == "refuse":
            raise ValueError(f"{key}: a resumed run keeps its saved value (only data, iters and how the "
                             "process runs may change)")
    return _finish(_C._resume(_path_text("out", out), text, quiet, on_step, on_eval))
