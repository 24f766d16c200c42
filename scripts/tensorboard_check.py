#!/usr/bin/env python3
"""`make tensorboard-check`: TensorBoard in a real browser shows the loss curve of a run.

1. trains a small model for a few seconds with `attograd train --tensorboard`;
2. starts `tensorboard --logdir` on 127.0.0.1 at a free port (from the first Python that has
   tensorboard: $TENSORBOARD_PYTHON, $TORCH_PYTHON, the repository's .venv-torch, which
   `make bench-torch2` installs) and waits until its scalars API serves every loss point;
3. opens the scalars dashboard, filtered to the losses, in headless Chromium (Debian package
   chromium) and takes a screenshot;
4. checks the screenshot: of the size asked for, not blank, and with the pixels of the curves
   (TensorBoard's colour for the first run) inside the charts;
5. saves it (docs/tensorboard.png by default).
Needs only the standard library. Exit status 0 when every check passes, 1 otherwise.
"""

import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CURVE_RGB = (255, 112, 67)  # #ff7043, the first run's colour in TensorBoard's scalars dashboard


def die(msg):
    print(f"tensorboard-check: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def tensorboard_python():
    for py in (os.environ.get("TENSORBOARD_PYTHON"), os.environ.get("TORCH_PYTHON"),
               os.path.join(ROOT, ".venv-torch", "bin", "python")):
        if py and os.path.exists(py) and subprocess.run([py, "-c", "import tensorboard.main"],
                                                        capture_output=True).returncode == 0:
            return py
    die("no Python with tensorboard: run `make bench-torch2` (pip installs it into .venv-torch) "
        "or set TENSORBOARD_PYTHON")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def read_png(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        die(f"{path}: not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        die(f"{path}: unexpected PNG format (depth {depth}, colour type {ctype}, interlace {interlace})")
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(idat), w * bpp
    prev, rows = bytearray(stride), []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):  # undo the row filter: none, sub, up, average, Paeth
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attograd", default=os.path.join(ROOT, "build", "attograd"))
    ap.add_argument("--data", default=None, help="corpus (default: scripts/find-corpus.sh)")
    ap.add_argument("--workdir", default=os.path.join(ROOT, "build", "tensorboard-check"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "tensorboard.png"))
    ap.add_argument("--size", default="1280,720", help="browser window, WIDTH,HEIGHT")
    ap.add_argument("--timeout", type=float, default=90, help="seconds to wait for TensorBoard")
    a = ap.parse_args()
    chromium = shutil.which("chromium") or die("headless Chromium not found: apt-get install chromium")
    py = tensorboard_python()
    data = a.data or subprocess.run([os.path.join(ROOT, "scripts", "find-corpus.sh")], capture_output=True,
                                    text=True, check=True).stdout.strip()

    # 1. A short run: 200 steps of a 2-layer model, a point every 5 steps, an evaluation every 20.
    run = os.path.join(a.workdir, "run")
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    train = [a.attograd, "train", "--data", data, "--out", run, "--iters", "200", "--eval-every", "20",
             "--log-every", "5", "--layers", "2", "--heads", "4", "--embd", "64", "--block", "64", "--batch", "8",
             "--eval-iters", "5", "--sample-tokens", "0", "--no-progress", "--tensorboard"]
    print("tensorboard-check: " + " ".join(train), flush=True)
    subprocess.run(train, check=True, stdout=subprocess.DEVNULL)
    n_evals = sum(1 for line in open(os.path.join(run, "metrics.jsonl")) if '"val_loss":null' not in line)

    # 2. TensorBoard on the run folder, until it serves every evaluation's validation loss.
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(os.path.join(a.workdir, "tensorboard.log"), "w")
    server = subprocess.Popen([py, "-m", "tensorboard.main", "--logdir", "run", "--host", "127.0.0.1",
                               "--port", str(port)], cwd=a.workdir, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline, points = time.time() + a.timeout, 0
        while time.time() < deadline and points < n_evals:
            if server.poll() is not None:
                die(f"tensorboard exited with status {server.returncode}; see {log.name}")
            try:
                q = urllib.parse.urlencode({"run": "tb", "tag": "loss/val"})
                points = len(get_json(f"{base}/data/plugin/scalars/scalars?{q}"))
            except Exception:
                time.sleep(1)
        if points < n_evals:
            die(f"after {a.timeout:.0f} s TensorBoard at {base} serves {points} of {n_evals} loss/val points")
        tags = get_json(f"{base}/data/plugin/scalars/tags").get("tb", {})
        print(f"tensorboard-check: TensorBoard at {base} serves run 'tb' with scalars {sorted(tags)}")

        # 3. The scalars dashboard, only the losses, without smoothing.
        width, height = (int(v) for v in a.size.split(","))
        shot = os.path.join(a.workdir, "tensorboard.png")
        url = f"{base}/#scalars&tagFilter=loss&_smoothingWeight=0"
        cmd = [chromium, "--headless=new", "--no-sandbox", "--enable-unsafe-swiftshader", "--hide-scrollbars",
               f"--window-size={width},{height}", "--virtual-time-budget=20000", f"--screenshot={shot}", url]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if r.returncode != 0 or not os.path.exists(shot):
            die(f"chromium failed ({r.returncode}):\n{r.stderr[-2000:]}")
    finally:
        server.terminate()
        server.wait(timeout=30)

    # 4. Not blank, and the curves drawn: pixels of the run's colour below the header bar.
    w, h, rows = read_png(shot)
    if (w, h) != (width, height):
        die(f"screenshot is {w}x{h}, asked for {width}x{height}")
    colours = {px for row in rows for px in row[::4]}
    curve = sum(1 for row in rows[h // 6:] for px in row[w // 4:]
                if sum((p - q) ** 2 for p, q in zip(px, CURVE_RGB)) < 40 ** 2)
    print(f"tensorboard-check: screenshot {w}x{h}, {len(colours)} colours, {curve} pixels of curve colour")
    if len(colours) < 200:  # a blank page with one line of text has about 60
        die(f"the screenshot looks blank ({len(colours)} colours)")
    if curve < 500:
        die(f"no loss curves in the screenshot (only {curve} pixels of the run's colour {CURVE_RGB} in the charts)")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    shutil.copyfile(shot, a.out)
    print(f"tensorboard-check: ok, wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
