"""How a tensor prints, as torch prints it: ``tensor([[1.0000, 2.5000], ...], dtype=..., grad_fn=<...>)``.

The rules are torch's: floats with 4 decimals, or with none (``1.``) when every value is whole,
or in scientific notation when the values span more than a factor of 1000 or reach 1e8 or go
below 1e-4; every element padded to one width; rows wrapped at 80 columns; tensors of more than
1000 elements summarized with their first and last 3 entries along each dim.
"""

import math

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80


class _Formatter:
    def __init__(self, values, floating):
        self.floating = floating
        self.sci = False
        self.whole = True
        self.width = 1
        if not floating:
            self.width = max((len(self._plain(v)) for v in values), default=1)
            return
        finite = [v for v in values if math.isfinite(v)]
        nonzero = [abs(v) for v in finite if v != 0]
        self.whole = all(v == math.ceil(v) for v in finite)
        if nonzero:
            hi, lo = max(nonzero), min(nonzero)
            if self.whole:
                self.sci = hi > 1e8
            else:
                self.sci = hi / lo > 1000.0 or hi > 1e8 or lo < 1e-4
        self.width = max((len(self._text(v)) for v in values), default=1)

    @staticmethod
    def _plain(v):
        return str(v)

    def _text(self, v):
        if not self.floating:
            return self._plain(v)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if self.sci:
            return f"{v:.{PRECISION}e}"
        if self.whole:
            return f"{v:.0f}."
        return f"{v:.{PRECISION}f}"

    def format(self, v):
        return self._text(v).rjust(self.width)


def _summarized_values(data, shape, summarize):
    """The values that will be printed (all, or the edges of each dim when summarizing)."""
    if not shape:
        return [data]
    n = shape[0]
    if summarize and n > 2 * EDGEITEMS:
        rows = list(data[:EDGEITEMS]) + list(data[n - EDGEITEMS:])
    else:
        rows = list(data)
    out = []
    for row in rows:
        out.extend(_summarized_values(row, shape[1:], summarize))
    return out


def _format_nested(data, shape, fmt, indent, summarize):
    if not shape:
        return fmt.format(data)
    n = shape[0]
    elided = summarize and n > 2 * EDGEITEMS
    if len(shape) == 1:
        items = [fmt.format(v) for v in (data[:EDGEITEMS] if elided else data)]
        if elided:
            items += [" ..."] + [fmt.format(v) for v in data[n - EDGEITEMS:]]
        per_line = max(1, (LINEWIDTH - indent) // (fmt.width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = data[:EDGEITEMS] + data[n - EDGEITEMS:] if elided else data
    parts = [_format_nested(r, shape[1:], fmt, indent + 1, summarize) for r in rows]
    if elided:
        parts = parts[:EDGEITEMS] + ["..."] + parts[EDGEITEMS:]
    separator = "," + "\n" * (len(shape) - 1) + " " * (indent + 1)
    return "[" + separator.join(parts) + "]"


def tensor_repr(t, prefix="tensor(", default_dtype=None):
    import attograd

    shape = tuple(t.shape)
    dtype = t.dtype
    data = t.detach().tolist()
    summarize = t.numel() > THRESHOLD
    suffixes = []
    if t.numel() == 0:
        body = "[]"
        if shape != (0,):
            suffixes.append(f"size={shape}")
    else:
        fmt = _Formatter(_summarized_values(data, shape, summarize), dtype.is_floating_point)
        body = _format_nested(data, shape, fmt, len(prefix), summarize)
    default = default_dtype or attograd.get_default_dtype()
    if dtype.is_floating_point and dtype != default or dtype == attograd.int64 and t.numel() == 0:
        suffixes.append(f"dtype={dtype!r}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return prefix + body + "".join(", " + s for s in suffixes) + ")"
