#!/usr/bin/env python3
"""Reads the TensorBoard event files of a run `attograd train --tensorboard` wrote with pip's
tensorboard (EventAccumulator, what TensorBoard itself loads) and checks every tag against the
run's own files: each scalar against metrics.jsonl, a weight and a gradient histogram for every
tensor of model.safetensors, an attention image per layer, the sample text.

usage: check_tensorboard.py RUN_DIR

Runs under the first Python that can import tensorboard: $TENSORBOARD_PYTHON, $TORCH_PYTHON,
the repository's .venv-torch (`make bench-torch2` installs tensorboard there), this one. With
none, exits 77, which ctest reports as skipped.
"""

import glob
import json
import math
import os
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP = 77


def has_tensorboard(python):
    probe = "from tensorboard.backend.event_processing.event_accumulator import EventAccumulator"
    return subprocess.run([python, "-c", probe], capture_output=True).returncode == 0


def reexec_under_tensorboard_python():
    candidates = [os.environ.get("TENSORBOARD_PYTHON"), os.environ.get("TORCH_PYTHON"),
                  os.path.join(ROOT, ".venv-torch", "bin", "python")]
    for py in candidates:
        if py and os.path.exists(py) and has_tensorboard(py):
            os.execv(py, [py] + sys.argv)
    print("skipped: no Python with tensorboard (set TENSORBOARD_PYTHON, or run make bench-torch2)")
    sys.exit(SKIP)


def safetensors_shapes(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return {k: v["shape"] for k, v in header.items() if k != "__metadata__"}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    files = glob.glob(os.path.join(run, "tb", "events.out.tfevents.*"))
    if len(files) != 1:
        fail(f"expected one event file in {run}/tb, found {files}")
    ea = EventAccumulator(os.path.join(run, "tb"),
                          size_guidance={"scalars": 0, "histograms": 0, "images": 0, "tensors": 0}).Reload()
    tags = ea.Tags()

    metrics = [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl")) if line.strip()]
    evals = [m for m in metrics if m["val_loss"] is not None]
    logs = [m for m in metrics if m["val_loss"] is None]
    shapes = safetensors_shapes(os.path.join(run, "model.safetensors"))
    n_layer = len({k.split(".")[1] for k in shapes if k.startswith("blocks.")})

    # Scalars: the same steps and (to float32) the same values as metrics.jsonl, which has every
    # one of them.
    expected_scalars = {"loss/train": (evals, "train_loss"), "loss/val": (evals, "val_loss"),
                        "loss/train_batch": (logs, "train_loss"), "lr": (logs, "lr"),
                        "throughput/tokens_per_s": (logs, "tokens_per_s"), "grad_norm": (logs, "grad_norm"),
                        "throughput/ms_per_step": (logs, "ms_per_step"), "throughput/mfu": (logs, "mfu")}
    missing = set(expected_scalars) - set(tags["scalars"])
    if missing:
        fail(f"scalar tags missing: {sorted(missing)}; found {tags['scalars']}")
    extra = set(tags["scalars"]) - set(expected_scalars)
    if extra:
        fail(f"scalar tags that metrics.jsonl does not carry: {sorted(extra)}")
    for tag, (rows, key) in expected_scalars.items():
        points = ea.Scalars(tag)
        if [p.step for p in points] != [m["iter"] for m in rows]:
            fail(f"{tag}: steps {[p.step for p in points]}, metrics.jsonl has {[m['iter'] for m in rows]}")
        for p, m in zip(points, rows):
            want = m[key] if key else None
            if want is not None and not math.isclose(p.value, want, rel_tol=1e-6, abs_tol=1e-12):
                fail(f"{tag} at step {p.step}: {p.value}, metrics.jsonl has {want}")
            if not math.isfinite(p.value) or (key == "grad_norm" and not p.value > 0):
                fail(f"{tag} at step {p.step}: {p.value} should be positive and finite")

    # Histograms: every parameter and every gradient, with as many values as the tensor has.
    grad_steps = [m["iter"] for m in evals if m["iter"] > 0]
    for name, shape in shapes.items():
        numel = math.prod(shape)
        for kind, steps in (("weights", [m["iter"] for m in evals]), ("grads", grad_steps)):
            tag = f"{kind}/{name}"
            if tag not in tags["histograms"]:
                fail(f"histogram {tag} missing")
            hs = ea.Histograms(tag)
            if [h.step for h in hs] != steps:
                fail(f"{tag}: steps {[h.step for h in hs]}, expected {steps}")
            for h in hs:
                v = h.histogram_value
                if v.num != numel or sum(v.bucket) != numel or not v.min <= v.max:
                    fail(f"{tag} at step {h.step}: num {v.num}, buckets sum {sum(v.bucket)}, expected {numel}")
    if len(tags["histograms"]) != 2 * len(shapes):
        fail(f"{len(tags['histograms'])} histogram tags, expected {2 * len(shapes)}")

    # Images: one PNG per layer per evaluation, of the size it says.
    for layer in range(n_layer):
        tag = f"attention/layer{layer}"
        if tag not in tags["images"]:
            fail(f"image {tag} missing; found {tags['images']}")
        for im in ea.Images(tag):
            png = im.encoded_image_string
            if png[:8] != b"\x89PNG\r\n\x1a\n" or struct.unpack(">II", png[16:24]) != (im.width, im.height):
                fail(f"{tag} at step {im.step}: not a {im.width}x{im.height} PNG")
        if [im.step for im in ea.Images(tag)] != [m["iter"] for m in evals]:
            fail(f"{tag}: wrong steps")

    # Text: the sample, as the text plugin stores it.
    if "sample" not in tags["tensors"]:
        fail(f"text tag 'sample' missing; found {tags['tensors']}")
    samples = ea.Tensors("sample")
    if [t.step for t in samples] != [m["iter"] for m in evals]:
        fail("sample: wrong steps")
    for t in samples:
        if t.tensor_proto.dtype != 7 or len(t.tensor_proto.string_val) != 1:  # DT_STRING
            fail(f"sample at step {t.step}: not one string")
        text = t.tensor_proto.string_val[0].decode("utf-8")
        if len(text) < 20 or not all(line.startswith("    ") for line in text.split("\n")):
            fail(f"sample at step {t.step}: {text!r} is not an indented (code block) sample")
    meta = ea.SummaryMetadata("sample")
    if meta.plugin_data.plugin_name != "text":
        fail(f"sample: plugin {meta.plugin_data.plugin_name!r}, expected 'text'")

    print(f"tensorboard read back {len(tags['scalars'])} scalar tags, {len(tags['histograms'])} histogram tags, "
          f"{len(tags['images'])} image tags and {len(tags['tensors'])} text tag over {len(evals)} evaluations: all match")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if not has_tensorboard(sys.executable):
        reexec_under_tensorboard_python()
    check(sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
