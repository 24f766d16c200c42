#!/usr/bin/python3
"""The explore page in a real browser: Debian's chromium, driven by chromium-driver through
python3-selenium (scripts/setup-deps.sh installs the three). It writes a page with attograd,
opens it from disk, and checks what a student would do with it against numbers that do not come
from the page:

  attention  `explore --attention --unfused` (the README's seed example): the softmax node's
             value and received gradient, and the gradient of the leaf `query`, against their
             closed forms computed here (the same as `explain attention`'s walk);
  gpt        `explore --checkpoint RUN --text TEXT --unfused` on a trained GPT: each softmax
             node's received gradient against dLoss/dWeights that `attograd attend --grads`
             wrote (attention_grads.safetensors, read here byte by byte);

  hostile    `explore --checkpoint RUN --text TEXT` where the run folder's name, the corpus and
             the text hold `<!--<script>`, `</script>` and a script that would set a flag
             (issue 34, class 2): the page's own script runs (the graph is drawn, every node),
             the title shows the text as it is, and no injected script ran;

and in the first two: a click fills the panel; the next / previous buttons and the arrow keys step
through the backward pass in the engine's order, marking the running node and exactly the
edges whose gradient is known; picking a leaf highlights exactly the nodes on the paths from
the loss to it; the page logs no error; a screenshot is saved.

usage: explore_page.py --attograd BIN --workdir DIR --mode attention|gpt|hostile [--checkpoint RUN --text TEXT]
                       [--screenshot PNG] [--page PAGE.html (an existing page: only open it and time it)]
"""

import argparse
import json
import math
import os
import struct
import subprocess
import sys
import time


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(p.stdout)
    if p.returncode != 0:
        fail(f"exit status {p.returncode}: {p.stderr}")
    return p.stdout


def read_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            fail(f"{path}: {name} is {info['dtype']}, expected F32")
        a, b = info["data_offsets"]
        out[name] = (info["shape"], list(struct.unpack(f"<{(b - a) // 4}f", data[a:b])))
    return out


def close(a, b, rel, what):
    if abs(a - b) > rel * max(1.0, abs(b)):
        fail(f"{what}: the page shows {a!r}, expected {b!r}")


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1600,1000",
              "--force-device-scale-factor=1"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


def open_page(d, page):
    """Opens the page and returns the seconds from navigation to the script's end (ready)."""
    d.get("file://" + os.path.abspath(page))
    t0 = time.time()
    while d.execute_script("return document.body && document.body.dataset.ready") != "1":
        if time.time() - t0 > 60:
            fail("the page did not get ready within 60 s")
        time.sleep(0.05)
    return d.execute_script(
        "const n = performance.getEntriesByType('navigation')[0]; return (performance.now() - n.startTime) / 1000;")


def check_no_errors(d):
    errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
    if errors:
        fail("the page logged errors: " + json.dumps(errors))


def exact(d, css):
    els = d.find_elements("css selector", css)
    if not els:
        fail(f"nothing matches {css}")
    return float(els[0].get_attribute("data-exact")), els[0].text


def table(d, role):
    cells = d.find_elements("css selector", f"#panel .tensor[data-role={role}] table.values td")
    return [float(c.text) for c in cells]


def click_node(d, i):
    d.find_element("css selector", f"#node-{i} rect").click()
    head = d.find_element("css selector", "#panel h2").text
    if head != D_nodes[i]["op"]:
        fail(f"clicked node {i} ({D_nodes[i]['op']}), the panel shows {head!r}")


def check_steps(d, D):
    from selenium.webdriver.common.keys import Keys

    order, edges = D["order"], D["edges"]

    def expect_step(k):
        label = d.find_element("id", "step").text
        cur = d.find_elements("css selector", "g.node.current")
        known = {int(e.get_attribute("data-edge")) for e in d.find_elements("css selector", "path.edge.known")}
        ran = set(order[: k + 1])
        want = {j for j, e in enumerate(edges) if e["to"] in ran}
        if k < 0:
            if cur or known or not label.startswith("before the backward pass"):
                fail(f"before the backward pass: label {label!r}, {len(cur)} current nodes, {len(known)} known edges")
            return
        i = order[k]
        if label != f"backward step {k + 1} / {len(order)}: {D['nodes'][i]['op']} (node {i})":
            fail(f"step {k + 1}: the label says {label!r}")
        if len(cur) != 1 or cur[0].get_attribute("id") != f"node-{i}":
            fail(f"step {k + 1}: the current node should be node-{i}")
        if known != want:
            fail(f"step {k + 1}: {len(known)} edges marked known, expected {len(want)}")
        if d.find_element("css selector", "#panel h2").text != D["nodes"][i]["op"]:
            fail(f"step {k + 1}: the panel does not show the running node")

    expect_step(-1)
    body = d.find_element("css selector", "body")
    for k in range(3):
        body.send_keys(Keys.ARROW_RIGHT)
        expect_step(k)
    body.send_keys(Keys.ARROW_LEFT)
    expect_step(1)
    d.find_element("id", "next").click()
    d.find_element("id", "next").click()
    expect_step(3)
    d.find_element("id", "prev").click()
    expect_step(2)
    for _ in range(len(order) + 2):
        d.find_element("id", "next").click()
    expect_step(len(order) - 1)
    if d.find_elements("css selector", "path.edge:not(.known)"):
        fail("after the last step every edge's gradient is known")
    print(f"stepping: {len(order)} backward steps, keys and buttons, known edges as expected")


def check_path(d, D, leaf_name):
    from selenium.webdriver.support.ui import Select

    nodes, edges = D["nodes"], D["edges"]
    leaf = next(i for i, n in enumerate(nodes) if n["leaf"] and n["op"] == leaf_name)
    on, stack = {leaf}, [leaf]
    while stack:
        v = stack.pop()
        for e in edges:
            if e["from"] == v and e["to"] not in on:
                on.add(e["to"])
                stack.append(e["to"])
    Select(d.find_element("id", "param")).select_by_visible_text(leaf_name)
    shown = {int(g.get_attribute("data-node")) for g in d.find_elements("css selector", "g.node.onpath")}
    if shown != on or 0 not in shown:
        fail(f"path to {leaf_name}: {len(shown)} nodes highlighted, expected {len(on)} including the loss")
    faded = d.find_elements("css selector", "g.node.faded")
    if len(faded) != len(nodes) - len(on):
        fail(f"path to {leaf_name}: {len(faded)} nodes faded, expected {len(nodes) - len(on)}")
    print(f"path: {len(on)} of {len(nodes)} nodes lie on the paths from the loss to {leaf_name}")


def check_attention(d, D):
    global D_nodes
    D_nodes = D["nodes"]
    sm = next(i for i, n in enumerate(D["nodes"]) if n["op"] == "softmax")
    click_node(d, sm)
    # The seed example: S = QKᵀ/√2 = [[r, r, 0], [0, r, r]], A = softmax(S), dL/dA = G·Vᵀ with G = I.
    r = 1 / math.sqrt(2)
    a, b = math.exp(r) / (2 * math.exp(r) + 1), 1 / (2 * math.exp(r) + 1)
    want_a = [a, a, b, b, a, a]
    want_da = [10, 0, 0, 0, 5, 1]
    for got, want, what in ((table(d, "value"), want_a, "softmax value"), (table(d, "grad"), want_da, "dL/dA")):
        if len(got) != 6:
            fail(f"{what}: {len(got)} numbers in the panel")
        for x, y in zip(got, want):
            close(x, y, 1e-5, what)  # the table shows 6 significant digits
    norm, text = exact(d, "#panel .tensor[data-role=grad] .norm")
    close(norm, math.sqrt(126), 1e-15, "|dL/dA|")
    close(float(text), math.sqrt(126), 1e-5, "|dL/dA| as printed")
    # dL/dS = A ⊙ (dA − rowsum(A ⊙ dA)), sent by the softmax; dL/dQ = dL/dS·K/√2 reaches `query`.
    r0, r1 = 10 * a, 6 * a
    ds = [[a * (10 - r0), a * (0 - r0), b * (0 - r0)], [b * (0 - r1), a * (5 - r1), a * (1 - r1)]]
    for x, y in zip(table(d, "sent0"), sum(ds, [])):
        close(x, y, 1e-5, "dL/dS")
    fd_rel, _ = exact(d, "#panel .fd-rel")
    if not fd_rel < 1e-6:
        fail(f"the softmax's finite-difference check: relative difference {fd_rel}")
    q = next(i for i, n in enumerate(D["nodes"]) if n["leaf"] and n["op"] == "query")
    click_node(d, q)
    K = [[1, 0], [1, 1], [0, 1]]
    dq = [sum(ds[i][j] * K[j][c] for j in range(3)) * r for i in range(2) for c in range(2)]
    for x, y in zip(table(d, "grad"), dq):
        close(x, y, 1e-5, "dL/dQ at the leaf query")
    print("panel: softmax value, dL/dA, dL/dS and dL/dQ equal their closed forms")
    check_steps(d, D)
    check_path(d, D, "key")


def check_gpt(d, D, grads_file, T):
    global D_nodes
    D_nodes = D["nodes"]
    grads = read_safetensors(grads_file)  # layer{i}: dLoss/dWeights (H, T+1, T+1) from attend --grads
    softmax = [i for i, n in enumerate(D["nodes"]) if n["op"] == "softmax"]
    if len(softmax) != len(grads):
        fail(f"{len(softmax)} softmax nodes for {len(grads)} layers")
    for layer in range(len(grads)):
        i = softmax[len(grads) - 1 - layer]  # topological order: the last layer's first
        shape, v = grads[f"layer{layer}"]
        H, S = shape[0], shape[1]
        cut = [v[(h * S + r) * S + c] for h in range(H) for r in range(T) for c in range(T)]
        click_node(d, i)
        norm, text = exact(d, "#panel .tensor[data-role=grad] .norm")
        want = math.sqrt(sum(x * x for x in cut))
        close(norm, want, 1e-4, f"layer {layer}: |dL/dA|")
        amax, _ = exact(d, "#panel .tensor[data-role=grad] .amax")
        close(amax, max(cut, key=abs), 1e-4, f"layer {layer}: the largest dL/dA entry")
        fd_rel, _ = exact(d, "#panel .fd-rel")
        if not fd_rel < 1e-6:
            fail(f"layer {layer} softmax: finite-difference relative difference {fd_rel}")
    print(f"panel: the {len(softmax)} softmax nodes received dL/dA as attend --grads computed it")
    check_steps(d, D)
    check_path(d, D, "blocks.0.attn.in_proj_weight")


HOSTILE = "<!--<script>window.pwned=1</script><img src=x onerror=window.pwned=2>&amp;"


def make_hostile_page(attograd, workdir):
    """A run folder named with, trained on and explored with text that would break a page."""
    corpus = os.path.join(workdir, "hostile_corpus.txt")
    with open(corpus, "w") as f:
        f.write((HOSTILE + " the engine counts the steps.\n") * 40)
    run_dir = os.path.join(workdir, "run" + HOSTILE.replace("/", "|"))
    run([attograd, "train", "--data", corpus, "--out", run_dir, "--overwrite", "--iters", "1", "--eval-every", "1",
         "--eval-iters", "1", "--layers", "1", "--heads", "2", "--embd", "16", "--block", "24", "--batch", "2",
         "--sample-tokens", "0", "--no-progress"])
    page = os.path.join(workdir, "explore_hostile.html")
    text = "<!--<script>x</script>&"
    run([attograd, "explore", "--checkpoint", run_dir, "--text", text, "--out", page])
    return page, text, run_dir


def check_hostile(d, D, text, run_dir):
    if d.execute_script("return window.pwned === undefined;") is not True:
        fail("a script from the text ran in the page")
    drawn = d.find_elements("css selector", "svg#graph g.node")
    if len(drawn) != len(D["nodes"]):
        fail(f"the graph shows {len(drawn)} nodes of {len(D['nodes'])}: the page's script did not run to its end")
    shown = d.find_element("id", "title").text
    if text not in shown or os.path.basename(run_dir) not in shown:
        fail(f"the title does not show the text and the folder as they are: {shown!r}")
    if d.title != "attograd explore: " + D["title"]:
        fail(f"the document's title is {d.title!r}")
    print(f"hostile text: the page drew all {len(drawn)} nodes, showed the text as it is, ran no injected script")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attograd")
    ap.add_argument("--workdir", default=".")
    ap.add_argument("--mode", choices=["attention", "gpt", "hostile", "open"], required=True)
    ap.add_argument("--checkpoint")
    ap.add_argument("--text")
    ap.add_argument("--screenshot")
    ap.add_argument("--page")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    page = args.page or os.path.join(args.workdir, f"explore_{args.mode}.html")
    if args.mode == "attention":
        run([args.attograd, "explore", "--attention", "--unfused", "--out", page])
    elif args.mode == "hostile":
        page, hostile_text, hostile_run = make_hostile_page(args.attograd, args.workdir)
    elif args.mode == "gpt":
        run([args.attograd, "explore", "--checkpoint", args.checkpoint, "--text", args.text, "--unfused", "--out", page])
        run([args.attograd, "attend", "--checkpoint", args.checkpoint, "--text", args.text, "--grads", "--no-png",
             "--out", os.path.join(args.workdir, "attend_for_explore")])
    d = browser()
    try:
        seconds = open_page(d, page)
        size = os.path.getsize(page)
        print(f"opened {page} ({size / 1e6:.2f} MB) in {seconds:.2f} s")
        check_no_errors(d)
        D = d.execute_script("return window.explore.data;")
        if args.mode == "hostile":
            check_hostile(d, D, hostile_text, hostile_run)
        elif args.mode == "attention":
            check_attention(d, D)
        elif args.mode == "gpt":
            T = len(args.text) - 1
            check_gpt(d, D, os.path.join(args.workdir, "attend_for_explore", "attention_grads.safetensors"), T)
        check_no_errors(d)
        if args.screenshot:
            d.save_screenshot(args.screenshot)
            print(f"screenshot: {args.screenshot}")
    finally:
        d.quit()
    print("PASS: explore page")


if __name__ == "__main__":
    main()
