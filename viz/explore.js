// The explore page's script (viz/explore_html.h describes the page and its data). Plain
// browser JavaScript, no library: it draws the graph from the layout in the data, fills the
// panel when a node is clicked, steps through the backward pass and highlights paths.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  const COMMAND = JSON.parse(document.getElementById("command").textContent);
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.getElementById("graph");
  const pane = document.getElementById("graph-pane");
  const panel = document.getElementById("panel");
  const nodes = D.nodes, edges = D.edges, T = D.tensors, order = D.order;
  const consumers = nodes.map(() => []);  // edge indices out of each node (towards the loss)
  edges.forEach((e, k) => consumers[e.from].push(k));
  const stepOf = nodes.map((n) => (n.leaf ? -1 : n.step));
  const state = { step: -1, selected: -1, zoom: 1, param: -1 };
  const nodeEls = [], edgeEls = [];

  // ---- numbers -------------------------------------------------------------------------------
  function fmt(x) {
    if (x === null || x === undefined) return "–";
    if (x === 0) return "0";
    return Number(x).toPrecision(6);
  }
  function shapeText(s) { return "[" + s.join(", ") + "]"; }
  function label(i) { return nodes[i].op + " " + shapeText(nodes[i].shape) + " (node " + i + ")"; }
  function exact(x, cls) {
    return '<span class="' + cls + '" data-exact="' + x + '">' + fmt(x) + "</span>";
  }
  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  // ---- colours: the same scales as viz/heatmap.h ------------------------------------------------
  const DIVERGING = [[5, 48, 97], [67, 147, 195], [255, 255, 255], [214, 96, 77], [103, 0, 31]];
  const SEQUENTIAL = [[255, 255, 255], [252, 187, 161], [239, 59, 44], [165, 15, 21], [70, 0, 10]];
  function ramp(stops, t) {
    t = Math.min(1, Math.max(0, isFinite(t) ? t : 0)) * (stops.length - 1);
    const k = Math.min(stops.length - 2, Math.floor(t)), f = t - k;
    return stops[k].map((a, c) => Math.round(a + (stops[k + 1][c] - a) * f));
  }
  // Signed data: diverging, white at zero, limits ±max |v|. Non-negative data: sequential from 0.
  function scaleOf(t) {
    const lim = Math.max(Math.abs(t.min), Math.abs(t.max));
    return { diverging: t.min < 0, lim: lim > 0 ? lim : 1 };
  }
  function colorOf(v, sc) {
    return sc.diverging ? ramp(DIVERGING, (v / sc.lim + 1) / 2) : ramp(SEQUENTIAL, v / sc.lim);
  }

  // ---- tensors ---------------------------------------------------------------------------------------
  // The grids are IEEE half precision, divided by the tensor's largest magnitude (scale).
  function half(h) {
    const e = (h >> 10) & 31, m = h & 1023, s = h & 32768 ? -1 : 1;
    if (e === 0) return s * m * Math.pow(2, -24);
    if (e === 31) return m ? NaN : s * Infinity;
    return s * (1 + m / 1024) * Math.pow(2, e - 15);
  }
  const decoded = new Map();
  function grid(ti) {
    if (!decoded.has(ti)) {
      const bin = atob(T[ti].data), n = bin.length / 2, out = new Float64Array(n), scale = T[ti].scale;
      for (let i = 0; i < n; ++i) out[i] = half(bin.charCodeAt(2 * i) | (bin.charCodeAt(2 * i + 1) << 8)) * scale;
      decoded.set(ti, out);
    }
    return decoded.get(ti);
  }
  // The multi-index of flat row r (leading dims) and column c (the last dim).
  function indexOf(t, r, c) {
    const lead = t.shape.slice(0, -1), idx = [];
    for (let d = lead.length - 1; d >= 0; --d) { idx.unshift(r % lead[d]); r = Math.floor(r / lead[d]); }
    return t.shape.length ? idx.concat([c]) : [];
  }

  function tensorBlock(ti, role) {
    if (ti === null || ti === undefined) return '<p class="none">none</p>';
    const t = T[ti];
    let h = '<div class="tensor" data-role="' + role + '" data-tensor="' + ti + '">';
    h += '<div class="stats">' + shapeText(t.shape) + "  |·| = " + exact(t.norm, "norm") + "  min " + exact(t.min, "min") +
         "  max " + exact(t.max, "max") + "<br>largest |entry| " + exact(t.amax, "amax") + " at " + shapeText(t.amax_at) + "</div>";
    h += '<canvas class="heat"></canvas><div class="legend"></div><div class="readout"></div>';
    if (t.values) {
      h += '<table class="values">';
      const cols = t.cols || 1;
      for (let r = 0; r < t.values.length / cols; ++r) {
        h += "<tr>";
        for (let c = 0; c < cols; ++c) h += "<td>" + fmt(t.values[r * cols + c]) + "</td>";
        h += "</tr>";
      }
      h += "</table>";
    }
    return h + "</div>";
  }

  function drawTensor(div) {
    const t = T[+div.dataset.tensor], g = grid(+div.dataset.tensor), sc = scaleOf(t);
    const canvas = div.querySelector("canvas.heat");
    canvas.width = t.gc, canvas.height = t.gr;
    const cell = Math.max(1, Math.min(24, Math.floor(460 / t.gc), Math.floor(560 / t.gr)));
    canvas.style.width = t.gc * cell + "px", canvas.style.height = t.gr * cell + "px";
    const ctx = canvas.getContext("2d"), img = ctx.createImageData(t.gc, t.gr);
    for (let i = 0; i < g.length; ++i) {
      const [r, gg, b] = colorOf(g[i], sc);
      img.data[4 * i] = r, img.data[4 * i + 1] = gg, img.data[4 * i + 2] = b, img.data[4 * i + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
    // The legend: the colour bar and its values.
    const legend = div.querySelector(".legend"), bar = document.createElement("canvas");
    bar.width = 160, bar.height = 10;
    const bctx = bar.getContext("2d");
    for (let x = 0; x < 160; ++x) {
      const v = sc.diverging ? (x / 159 * 2 - 1) * sc.lim : x / 159 * sc.lim;
      const [r, gg, b] = colorOf(v, sc);
      bctx.fillStyle = "rgb(" + r + "," + gg + "," + b + ")", bctx.fillRect(x, 0, 1, 10);
    }
    const lo = document.createElement("span"), hi = document.createElement("span");
    lo.textContent = sc.diverging ? fmt(-sc.lim) : "0";
    hi.textContent = fmt(sc.lim) + (sc.diverging ? "  (white = 0)" : "");
    legend.append(lo, bar, hi);
    const readout = div.querySelector(".readout");
    const pooled = t.br > 1 || t.bc > 1;
    readout.textContent = pooled ? "shown pooled: each cell is the entry of largest |value| in a " + t.br + "×" + t.bc + " block" : "";
    canvas.addEventListener("mousemove", (ev) => {
      const rect = canvas.getBoundingClientRect();
      const c = Math.min(t.gc - 1, Math.floor((ev.clientX - rect.left) / rect.width * t.gc));
      const r = Math.min(t.gr - 1, Math.floor((ev.clientY - rect.top) / rect.height * t.gr));
      const v = g[r * t.gc + c];
      readout.textContent = pooled ? "rows " + r * t.br + "…, cols " + c * t.bc + "…: " + fmt(v)
                                   : shapeText(indexOf(t, r, c)) + " = " + fmt(v);
    });
  }

  // ---- the panel ------------------------------------------------------------------------------
  function showNode(i) {
    const n = nodes[i];
    let h = "<h2>" + esc(n.op) + "</h2>";
    h += '<div class="meta">' + (n.leaf ? "leaf" : "op") + " node " + i + ", " + shapeText(n.shape) + " " + n.dtype;
    if (i === D.root) h += ", the loss (the root of the backward pass)";
    h += "</div>";
    if (!n.leaf) {
      h += '<div class="meta">' + (n.step >= 0 ? "backward step " + (n.step + 1) + " of " + order.length
                                               : "its backward never ran (no gradient reached it)") + "</div>";
      h += '<div class="meta">recorded at ' + esc(n.where) + "</div>";
      if (n.formula) {
        const what = n.formula.kind === 1 ? "its backward, one line of code" :
                     n.formula.kind === 2 ? "the derivation above it in the source" : "the backward formula, as the source states it";
        h += "<h3>" + what + " (" + esc(n.formula.at) + ")</h3><div class=\"formula\">" + esc(n.formula.text) + "</div>";
      }
      if (n.reference) {
        const r = D.reference[n.reference];
        h += "<h3>the reference: " + esc(n.reference) + " in plain float64 loops (" + esc(r.at) + ")</h3>" +
             '<div class="formula reference">' + esc(r.text) + "</div>";
      }
    }
    h += "<h3>forward value</h3>" + tensorBlock(n.value, "value");
    h += "<h3>" + (n.leaf ? "gradient accumulated in .grad" : "gradient received, dL/d(output)") + "</h3>" + tensorBlock(n.grad, "grad");
    if (!n.leaf) {
      n.inputs.forEach((src, k) => {
        h += '<h3>gradient sent to input ' + k + ": " + (src >= 0 ? '<a href="#" data-goto="' + src + '">' + esc(label(src)) + "</a>"
                                                               : "(an input that needs no gradient)") + "</h3>";
        h += src >= 0 ? tensorBlock(n.sent[k], "sent" + k) : "";
      });
      h += "<h3>finite-difference check of this node's backward</h3>";
      if (n.fd) {
        h += '<div class="fd ' + (n.fd.ok ? "fd-ok" : "fd-bad") + '">⟨g, Δy⟩/2ε = ' + exact(n.fd.lhs, "fd-lhs") +
             "<br>Σᵢ ⟨sentᵢ, Δxᵢ⟩/2ε = " + exact(n.fd.rhs, "fd-rhs") + "<br>relative difference " + exact(n.fd.rel, "fd-rel") +
             (n.fd.ok ? " ✓" : " ✗ (over " + fmt(D.fd_tolerance) + ")") + "</div>";
        h += '<p class="hint">Every leaf moved by ±ε along one random direction (ε = ' + fmt(D.fd_step) +
             "), the forward replayed: Δy and Δxᵢ are this node's output and inputs in the two replays.</p>";
      } else {
        h += '<p class="none">' + esc(D.fd_note || "not checked: its backward never ran") + "</p>";
      }
    } else if (n.grad !== null) {
      h += '<p class="meta">the gradients the ops sent to it add up to its .grad: max |difference| ' +
           exact(n.leaf_sum_diff, "leaf-sum-diff") + "</p>";
    }
    panel.innerHTML = h;
    panel.scrollTop = 0;
    panel.querySelectorAll("div.tensor").forEach(drawTensor);
    panel.querySelectorAll("a[data-goto]").forEach((a) => a.addEventListener("click", (ev) => {
      ev.preventDefault();
      select(+a.dataset.goto, true);
    }));
  }

  function select(i, scroll) {
    if (state.selected >= 0) nodeEls[state.selected].classList.remove("selected");
    state.selected = i;
    if (i < 0) return;
    nodeEls[i].classList.add("selected");
    showNode(i);
    if (scroll) scrollToNode(i);
  }

  function scrollToNode(i) {
    const n = nodes[i], z = state.zoom;
    pane.scrollLeft = Math.max(0, n.x * z - pane.clientWidth / 2);
    pane.scrollTop = Math.max(0, n.y * z - pane.clientHeight / 2);
  }

  // ---- stepping through the backward pass ------------------------------------------------------------
  function setStep(s) {
    state.step = Math.max(-1, Math.min(order.length - 1, s));
    const done = (i) => stepOf[i] >= 0 && stepOf[i] <= state.step;
    nodes.forEach((n, i) => {
      const ran = n.leaf ? consumers[i].length > 0 && consumers[i].every((k) => done(edges[k].to)) : done(i);
      nodeEls[i].classList.toggle("ran", ran);
      nodeEls[i].classList.toggle("current", state.step >= 0 && order[state.step] === i);
    });
    edges.forEach((e, k) => edgeEls[k].classList.toggle("known", done(e.to)));
    const label = document.getElementById("step");
    if (state.step < 0) {
      label.textContent = "before the backward pass: press → (or next) to run it node by node";
    } else {
      const i = order[state.step];
      label.textContent = "backward step " + (state.step + 1) + " / " + order.length + ": " + nodes[i].op + " (node " + i + ")";
      select(i, true);
    }
  }

  // ---- paths from the loss to a leaf -------------------------------------------------------------------
  function setParam(i) {
    state.param = i;
    const on = new Set();
    if (i >= 0) {
      const stack = [i];
      on.add(i);
      while (stack.length) {
        const v = stack.pop();
        for (const k of consumers[v]) if (!on.has(edges[k].to)) on.add(edges[k].to), stack.push(edges[k].to);
      }
    }
    nodes.forEach((n, v) => {
      nodeEls[v].classList.toggle("onpath", i >= 0 && on.has(v));
      nodeEls[v].classList.toggle("faded", i >= 0 && !on.has(v));
    });
    edges.forEach((e, k) => {
      const path = i >= 0 && on.has(e.from) && on.has(e.to);
      edgeEls[k].classList.toggle("onpath", path);
      edgeEls[k].classList.toggle("faded", i >= 0 && !path);
    });
    document.getElementById("param").value = i >= 0 ? String(i) : "";
    if (i >= 0) select(i, true);
  }

  // ---- drawing the graph -------------------------------------------------------------------------------
  function el(tag, attrs) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  function pathOf(p) {
    let d = "M" + p[0][0] + "," + p[0][1];
    for (let i = 1; i < p.length; ++i) {
      const [x0, y0] = p[i - 1], [x1, y1] = p[i], dy = (y1 - y0) / 2;
      d += " C" + x0 + "," + (y0 + dy) + " " + x1 + "," + (y1 - dy) + " " + x1 + "," + y1;
    }
    return d;
  }
  function setZoom(z) {
    state.zoom = Math.max(0.05, Math.min(4, z));
    svg.setAttribute("width", D.width * state.zoom);
    svg.setAttribute("height", D.height * state.zoom);
  }
  function build() {
    svg.setAttribute("viewBox", "0 0 " + D.width + " " + D.height);
    const defs = el("defs", {}), marker = el("marker", { id: "arrow", viewBox: "0 0 8 8", refX: 8, refY: 4, orient: "auto",
                                                          markerUnits: "userSpaceOnUse", markerWidth: 9, markerHeight: 9 });
    marker.appendChild(el("path", { d: "M0,0 L8,4 L0,8 z", fill: "#888" }));
    defs.appendChild(marker);
    svg.appendChild(defs);
    const ge = el("g", { class: "edges" }), gn = el("g", { class: "nodes" });
    edges.forEach((e, k) => {
      const p = el("path", { class: "edge", d: pathOf(e.points), "marker-end": "url(#arrow)", "data-edge": k,
                             "data-from": e.from, "data-to": e.to });
      ge.appendChild(p), edgeEls.push(p);
    });
    nodes.forEach((n, i) => {
      const g = el("g", { class: "node " + (n.leaf ? "leaf" : "op") + (i === D.root ? " root" : ""), id: "node-" + i,
                          "data-node": i, "data-op": n.op, transform: "translate(" + (n.x - n.w / 2) + "," + (n.y - n.h / 2) + ")" });
      g.appendChild(el("rect", { width: n.w, height: n.h, rx: n.leaf ? 0 : 7 }));
      const t1 = el("text", { x: n.w / 2, y: 14, "text-anchor": "middle" }), t2 = el("text", { x: n.w / 2, y: 27, "text-anchor": "middle" });
      t1.textContent = n.op, t2.textContent = shapeText(n.shape);
      const title = el("title", {});
      title.textContent = n.op + " " + shapeText(n.shape) + (n.leaf ? "" : ", backward step " + (n.step + 1));
      g.append(title, t1, t2);
      g.addEventListener("click", () => select(i, false));
      gn.appendChild(g), nodeEls.push(g);
    });
    svg.append(ge, gn);
    const sel = document.getElementById("param");
    nodes.map((n, i) => [n, i]).filter(([n]) => n.leaf).sort((a, b) => (a[0].op < b[0].op ? -1 : 1)).forEach(([n, i]) => {
      const o = document.createElement("option");
      o.value = String(i), o.textContent = n.op;
      sel.appendChild(o);
    });
    sel.addEventListener("change", () => setParam(sel.value === "" ? -1 : +sel.value));
    document.getElementById("next").addEventListener("click", () => setStep(state.step + 1));
    document.getElementById("prev").addEventListener("click", () => setStep(state.step - 1));
    document.getElementById("zoom-in").addEventListener("click", () => setZoom(state.zoom * 1.25));
    document.getElementById("zoom-out").addEventListener("click", () => setZoom(state.zoom / 1.25));
    document.getElementById("fit").addEventListener("click", () =>
      setZoom(Math.min(pane.clientWidth / D.width, pane.clientHeight / D.height)));
    document.addEventListener("keydown", (ev) => {
      if (ev.target && (ev.target.tagName === "SELECT" || ev.target.tagName === "INPUT")) return;
      if (ev.key === "ArrowRight" || ev.key === "n") setStep(state.step + 1), ev.preventDefault();
      else if (ev.key === "ArrowLeft" || ev.key === "p") setStep(state.step - 1), ev.preventDefault();
      else if (ev.key === "Escape") setParam(-1);
    });
    const fd = D.fd_note ? "finite-difference check: " + D.fd_note
                         : "finite-difference check of every node's backward: " + (D.fd_failures === 0 ? "all agree" : D.fd_failures + " disagree");
    document.getElementById("title").innerHTML = esc(D.title) + ' <span class="sub">— loss ' + exact(D.loss, "loss") + ", " +
      D.dtype + ", " + nodes.length + " nodes, " + order.length + " backward steps; " + esc(fd) + "</span>";
    if (COMMAND) panel.insertAdjacentHTML("beforeend", '<p class="hint">made by: <code>' + esc(COMMAND) + "</code></p>");
    setZoom(Math.max(0.3, Math.min(1, pane.clientWidth / D.width)));
    setStep(-1);
    scrollToNode(D.root);
  }

  build();
  // For tests and the console.
  window.explore = { data: D, select: (i) => select(i, true), setStep, setParam, state };
  document.body.dataset.ready = "1";
})();
