"""PyTorch -> `attograd attention` -> PyTorch: the README's round trip.

Builds a torch.nn.MultiheadAttention with random parameters (biases too), runs it forward and
backward on random inputs with a causal mask and a key padding mask, writes the same inputs as
a CASE file, runs `attograd attention` on it, reads the RESULT and prints how far each attograd
tensor is from torch's. Exits 1 when any tensor is further than 1e-10 relative to its largest
entry (the float64 tolerance of tests/nn/test_attention_parity.cpp).

    /usr/bin/python3 tests/parity/probe_roundtrip.py [--attograd build/attograd] [--workdir DIR]
"""

import argparse
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402  (the repository's own reader/writer, numpy only)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attograd", default="build/attograd", help="the attograd program")
    ap.add_argument("--workdir", default=None, help="where to write the CASE and RESULT files")
    args = ap.parse_args()

    torch.manual_seed(0)
    E, H, L, N = 8, 2, 5, 3
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True, dtype=torch.float64)
    with torch.no_grad():  # torch starts the biases at zero; random ones test their gradients
        mha.in_proj_bias.uniform_(-0.5, 0.5)
        mha.out_proj.bias.uniform_(-0.5, 0.5)
    q, k, v = (torch.randn(N, L, E, dtype=torch.float64, requires_grad=True) for _ in range(3))
    padding = torch.zeros(N, L, dtype=torch.bool)
    padding[1, -2:] = True  # batch entry 1 ignores its last two keys
    # torch 1.13 has no is_causal: give it the mask that attograd builds from the flag.
    causal = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
    out, weights = mha(q, k, v, key_padding_mask=padding, attn_mask=causal)
    out.sum().backward()

    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or tmp
        case_path = os.path.join(workdir, "roundtrip.case.safetensors")
        result_path = os.path.join(workdir, "roundtrip.result.safetensors")
        case = {"query": q, "key": k, "value": v, "key_padding_mask": padding}
        case.update(dict(mha.named_parameters()))  # in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias
        safetensors_io.save_file(case, case_path,
                                 metadata={"num_heads": str(H), "batch_first": "true", "is_causal": "true"})
        subprocess.run([args.attograd, "attention", "--in", case_path, "--out", result_path], check=True)
        result, _ = safetensors_io.load_file(result_path)

    expected = {"output": out, "attn_weights": weights, "grad.query": q.grad, "grad.key": k.grad,
                "grad.value": v.grad}
    expected.update({"grad." + name: p.grad for name, p in mha.named_parameters()})
    worst = 0.0
    print()
    for name, want in expected.items():
        want = want.detach().numpy()
        err = float(abs(result[name] - want).max())
        rel = err / max(float(abs(want).max()), 1e-300)
        worst = max(worst, rel)
        print(f"{name:22} {str(list(want.shape)):12} max |attograd - torch| {err:.1e}  relative {rel:.1e}")
    ok = worst <= 1e-10 and set(result) == set(expected)
    print("all tensors agree" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
