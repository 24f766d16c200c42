#!/usr/bin/env python3
"""What torch's CPU generator draws, for tests/autograd/test_torch_stream.cpp: that a torch Generator
(autograd/random.h) gives the same numbers, bit for bit.

Run it with a Python that has torch and numpy (on this machine /work/venv-torch/bin/python):

    /work/venv-torch/bin/python tests/parity/make_generator_fixtures.py [--out DIR]

It writes DIR/draws.safetensors (default tests/parity/fixtures/generator/): one tensor per case,
named as the C++ test names the case it replays. Every case starts from its own seed. Cases whose
name starts with "default." are drawn again by a second run of this script under
ATEN_CPU_CAPABILITY=default, torch's build of its CPU kernels for CPUs without AVX2 (the test
replays them with those kernels forced). Bools are stored as int64 0/1; get_rng_state()'s bytes
as they are (U8).
"""

import argparse
import math
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import save_file  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def gen(seed):
    return torch.Generator().manual_seed(seed)


def probs(rows, cols, dtype=torch.float32):
    # Fixed weights, some zero, not normalised: (i*7 + j*3) % 5 per cell.
    w = [[float((i * 7 + j * 3) % 5) for j in range(cols)] for i in range(rows)]
    return torch.tensor(w, dtype=dtype)


def kernel_cases():
    """The draws whose arithmetic depends on torch's build of its CPU kernels."""
    c = {}
    c["rand_f32"] = torch.rand(1000, generator=gen(1))
    c["uniform_f32"] = torch.empty(1000).uniform_(-1 / 3, 2 / 7, generator=gen(1))
    c["uniform_f64"] = torch.empty(1000, dtype=torch.float64).uniform_(-1 / 3, 2 / 7, generator=gen(1))
    for n in (5, 17, 1000):
        c[f"randn_f32_{n}"] = torch.randn(n, generator=gen(2))
        c[f"randn_f64_{n}"] = torch.randn(n, dtype=torch.float64, generator=gen(2))
    c["normal_f32_mean_std"] = torch.empty(1000).normal_(0.3, 1.7, generator=gen(3))
    c["normal_f32_mean_std_small"] = torch.empty(7).normal_(0.3, 1.7, generator=gen(3))
    c["normal_f64_mean_std"] = torch.empty(1000, dtype=torch.float64).normal_(0.3, 1.7, generator=gen(3))
    c["normal_f64_mean_std_small"] = torch.empty(7, dtype=torch.float64).normal_(0.3, 1.7, generator=gen(3))
    return c


def cases():
    c = {}
    torch.manual_seed(42)
    c["state_seed_42"] = torch.get_rng_state()
    torch.randn(3)  # leaves the normal's second half kept
    torch.rand(700)  # twists the engine once
    c["state_after_draws"] = torch.get_rng_state()
    g = gen(2**40 + 5)  # the engine takes the seed's low 32 bits; the state keeps all 64
    c["state_seed_big"] = g.get_state()

    c.update(kernel_cases())
    for n in (1, 100):
        c[f"rand_f32_{n}"] = torch.rand(n, generator=gen(1))
    c["rand_f64"] = torch.rand(1000, dtype=torch.float64, generator=gen(1))
    c["uniform_f32_wide"] = torch.empty(500).uniform_(-1e3, 5e2, generator=gen(1))
    for n in (1, 15, 16, 31, 33):
        c[f"randn_f32_{n}"] = torch.randn(n, generator=gen(2))
        c[f"randn_f64_{n}"] = torch.randn(n, dtype=torch.float64, generator=gen(2))
    g = gen(5)  # the kept normal carries from one call to the next; a fill leaves it alone
    c["randn_sequence"] = torch.cat([torch.randn(3, generator=g), torch.randn(3, generator=g),
                                     torch.randn(20, generator=g), torch.randn(1, generator=g)])
    t = torch.empty(3, 7).t()  # (7, 3) with strides (1, 7): drawn in memory order, one by one
    t.normal_(generator=gen(4))
    c["normal_transposed"] = t.contiguous()
    t = torch.empty(3, 7).t()
    t.uniform_(-2, 3, generator=gen(4))
    c["uniform_transposed"] = t.contiguous()

    for name, (lo, hi) in {"0_10": (0, 10), "m5_5": (-5, 5), "below_2p28": (0, 2**28 - 1), "2p28": (0, 2**28),
                           "m2p40_2p40": (-(2**40), 2**40), "int64": (-(2**63), 2**63 - 1)}.items():
        c[f"randint_{name}"] = torch.randint(lo, hi, (100,), generator=gen(6))
    c["random_f32_0_1000"] = torch.empty(100).random_(0, 1000, generator=gen(6))
    c["random_f64_m7_7"] = torch.empty(100, dtype=torch.float64).random_(-7, 7, generator=gen(6))
    for name, dt in {"f32": torch.float32, "f64": torch.float64, "i64": torch.int64, "bool": torch.bool}.items():
        c[f"random_default_{name}"] = torch.empty(50, dtype=dt).random_(generator=gen(7))
        c[f"bernoulli_scalar_{name}"] = torch.empty(500, dtype=dt).bernoulli_(0.3, generator=gen(8))
    c["random_from_i64"] = torch.empty(50, dtype=torch.int64).random_(5, None, generator=gen(7))
    c["random_full_i64"] = torch.empty(50, dtype=torch.int64).random_(-(2**63), None, generator=gen(7))
    for n in (1, 2, 10, 1000):
        c[f"randperm_{n}"] = torch.randperm(n, generator=gen(9))
    c["randperm_f64"] = torch.randperm(100, dtype=torch.float64, generator=gen(9))

    p32 = torch.linspace(0, 1, 500)
    c["bernoulli_p"] = p32  # an input: the test reads it
    c["bernoulli_tensor_f32"] = torch.bernoulli(p32, generator=gen(10))
    c["bernoulli_tensor_f64"] = torch.bernoulli(p32.double(), generator=gen(10))
    c["bernoulli_f64_of_f32_p"] = torch.empty(500, dtype=torch.float64).bernoulli_(p32, generator=gen(10))
    c["bernoulli_broadcast_p"] = torch.empty(4, 5).bernoulli_(torch.linspace(0, 1, 5), generator=gen(10))
    c["exponential_f32"] = torch.empty(500).exponential_(2.5, generator=gen(11))
    c["exponential_f64"] = torch.empty(500, dtype=torch.float64).exponential_(2.5, generator=gen(11))

    c["multinomial_replacement"] = torch.multinomial(probs(3, 7), 20, replacement=True, generator=gen(12))
    c["multinomial_replacement_f64"] = torch.multinomial(probs(3, 7, torch.float64), 20, True, generator=gen(12))
    c["multinomial_replacement_1d"] = torch.multinomial(probs(1, 9)[0], 30, True, generator=gen(12))
    c["multinomial_no_replacement"] = torch.multinomial(probs(3, 50), 10, generator=gen(12))
    c["multinomial_one"] = torch.multinomial(probs(3, 50), 1, replacement=True, generator=gen(12))
    c["multinomial_all"] = torch.multinomial(probs(2, 6) + 1, 6, generator=gen(12))

    torch.manual_seed(13)
    x = torch.randn(1000)
    c["dropout_input"] = x
    c["dropout_03"] = F.dropout(x, 0.3)
    c["dropout_then"] = torch.rand(3)
    torch.manual_seed(13)
    c["dropout_1"] = torch.cat([F.dropout(torch.ones(5), 1.0), torch.rand(3)])  # p = 1 draws nothing

    torch.manual_seed(14)
    lin = torch.nn.Linear(20, 30)
    c["linear_weight"], c["linear_bias"] = lin.weight.detach(), lin.bias.detach()
    lin = torch.nn.Linear(7, 3, dtype=torch.float64)
    c["linear_f64_weight"], c["linear_f64_bias"] = lin.weight.detach(), lin.bias.detach()
    torch.manual_seed(15)
    c["embedding_weight"] = torch.nn.Embedding(10, 7).weight.detach()  # 70 values: torch's blocks
    c["embedding_small_weight"] = torch.nn.Embedding(3, 4).weight.detach()  # 12: one by one
    torch.nn.LayerNorm(6)  # draws nothing
    c["after_layer_norm"] = torch.rand(3)
    torch.manual_seed(16)
    mha = torch.nn.MultiheadAttention(8, 2)
    c["mha_in_proj_weight"] = mha.in_proj_weight.detach()
    c["mha_out_proj_weight"] = mha.out_proj.weight.detach()
    c["mha_then"] = torch.rand(3)
    torch.manual_seed(17)
    w = torch.empty(6, 9)
    torch.nn.init.xavier_uniform_(w, gain=1.3)
    c["xavier_uniform"] = w.clone()
    torch.nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    c["kaiming_uniform_linear"] = w.clone()
    return c


def as_stored(t):
    if t.dtype == torch.bool:
        t = t.to(torch.int64)
    return t.contiguous().numpy()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "fixtures", "generator"))
    ap.add_argument("--default-kernels-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.default_kernels_only:  # the child run: print the default build's draws as .npz bytes
        assert torch.backends.cpu.get_cpu_capability() == "DEFAULT"
        path = args.out
        np.savez(path, **{k: as_stored(v) for k, v in kernel_cases().items()})
        return
    store = {k: as_stored(v) for k, v in cases().items()}
    tmp = os.path.join(args.out, "default_kernels.npz")
    os.makedirs(args.out, exist_ok=True)
    subprocess.run([sys.executable, __file__, "--default-kernels-only", "--out", tmp], check=True,
                   env=dict(os.environ, ATEN_CPU_CAPABILITY="default"))
    with np.load(tmp) as d:
        for k in d.files:
            store["default." + k] = d[k]
    os.remove(tmp)
    meta = {"torch_version": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    save_file(store, os.path.join(args.out, "draws.safetensors"), metadata=meta)
    print(f"wrote {len(store)} cases to {args.out}/draws.safetensors")


if __name__ == "__main__":
    main()
