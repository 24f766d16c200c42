#!/usr/bin/python3
"""Generate the TransformerLM parity fixtures (tests/parity/fixtures/lm/) for
tests/models/test_lm_parity.cpp.

    cmake --build build                                  # needs build/attograd
    /usr/bin/python3 tests/parity/make_lm_fixtures.py [--attograd build/attograd] [--out DIR]

Inputs, committed and written by hand (original text, not from any corpus):
    tiny_corpus.txt   ~3.4 KB of prose the small model is trained on
    eval_text.txt     a few hundred characters of new text; every character is in the corpus

Steps:
  1. `attograd train` a small model on tiny_corpus.txt (2 layers, 2 heads, 32 wide, block 16,
     300 iterations: about a second; after only 50 it still sits on the unigram plateau with
     near-uniform attention) in a temporary folder; its model.safetensors is copied to
     tiny_model.safetensors (~110 KB).
  2. The PyTorch twin (twin.py) loads that file with load_state_dict(strict=True) and computes,
     in float64:
       * the logits of a fixed batch of ids (row 0: the first 16 characters of eval_text.txt,
         row 1: ids drawn from torch.Generator seeded 0);
       * the eval loss of eval_text.txt with `attograd eval`'s windows.
     The float32 twin must agree with the float64 one to 1e-5 (checked here).
  3. expected.safetensors: `ids` I64 (2, 16), `logits` F32 (2, 16, V); __metadata__:
     `eval_loss` (repr of the float64 value), `eval_loss_f32` (the float32 twin's),
     `predicted` (characters predicted), `torch_version`.
  4. Runs `attograd eval` on the new fixture and checks that it prints the same loss.

Only the checkpoint and expected.safetensors change when this is re-run (attograd's training
is deterministic for a given build, so usually they come out identical).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import safetensors_io  # noqa: E402
import twin  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "fixtures", "lm")
TRAIN_FLAGS = ["--layers", "2", "--heads", "2", "--embd", "32", "--block", "16", "--batch", "16",
               "--iters", "300", "--warmup", "5", "--lr", "1e-2", "--min-lr", "1e-3",
               "--eval-every", "25", "--eval-iters", "2", "--seed", "1", "--sample-tokens", "0",
               "--no-progress", "--threads", "1"]


def read_text(path: str) -> str:
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attograd", default=os.path.join(REPO, "build", "attograd"), help="the attograd program")
    ap.add_argument("--out", default=DEFAULT_OUT, help="fixture folder (holds tiny_corpus.txt, eval_text.txt)")
    a = ap.parse_args()

    corpus_path = os.path.join(a.out, "tiny_corpus.txt")
    eval_path = os.path.join(a.out, "eval_text.txt")
    model_path = os.path.join(a.out, "tiny_model.safetensors")
    expected_path = os.path.join(a.out, "expected.safetensors")
    corpus, eval_text = read_text(corpus_path), read_text(eval_path)
    missing = sorted(set(eval_text) - set(corpus))
    if missing:
        sys.exit(f"eval_text.txt uses characters missing from tiny_corpus.txt: {missing}")

    # 1. Train with attograd.
    with tempfile.TemporaryDirectory() as run:
        cmd = [a.attograd, "train", "--data", corpus_path, "--out", run] + TRAIN_FLAGS
        print("+", " ".join(cmd))
        subprocess.run(cmd, check=True)
        shutil.copyfile(os.path.join(run, "model.safetensors"), model_path)
    print(f"wrote {model_path} ({os.path.getsize(model_path)} bytes)")

    # 2. The twin, strict load, float64 and float32.
    m64, vocab = twin.load_attograd_checkpoint(model_path, torch.float64)
    m32, vocab32 = twin.load_attograd_checkpoint(model_path, torch.float32)
    assert vocab == vocab32 == twin.make_vocab(corpus), "checkpoint vocabulary differs from the corpus's"
    block, V = m64.cfg.block_size, m64.cfg.vocab_size
    eval_ids = twin.encode(eval_text, vocab)
    gen = torch.Generator().manual_seed(0)
    ids = torch.stack([torch.tensor(eval_ids[:block], dtype=torch.int64),
                       torch.randint(0, V, (block,), generator=gen, dtype=torch.int64)])
    with torch.no_grad():
        logits64 = m64(ids)
        logits32 = m32(ids)
    loss64, loss32 = twin.eval_loss(m64, eval_ids), twin.eval_loss(m32, eval_ids)
    err = (logits32.double() - logits64).abs().max().item()
    print(f"twin float32 vs float64: logits max abs err {err:.3e}, eval loss {loss32!r} vs {loss64!r}")
    if err > 1e-5 or abs(loss32 - loss64) > 1e-5:
        sys.exit("the float32 twin disagrees with the float64 twin")

    # 3. expected.safetensors.
    meta = {"eval_loss": repr(loss64), "eval_loss_f32": repr(loss32), "predicted": str(len(eval_ids) - 1),
            "torch_version": torch.__version__,
            "note": "logits and eval_loss from tests/parity/twin.py in float64; logits stored as F32"}
    safetensors_io.save_file({"ids": ids, "logits": logits64.to(torch.float32)}, expected_path, meta)
    print(f"wrote {expected_path}: ids {tuple(ids.shape)}, logits {tuple(logits64.shape)}, eval_loss {loss64!r}")

    # 4. attograd eval on the fixture.
    out = subprocess.run([a.attograd, "eval", "--checkpoint", model_path, "--text-file", eval_path],
                         check=True, capture_output=True, text=True).stdout
    print(out, end="")
    ag_loss = float(re.search(r"^loss ([0-9.]+)", out, re.M).group(1))
    if abs(ag_loss - loss64) > 1e-5:
        sys.exit(f"attograd eval says {ag_loss}, the twin {loss64!r}")
    print(f"attograd eval {ag_loss:.6f} matches the twin {loss64:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
