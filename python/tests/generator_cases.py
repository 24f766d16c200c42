"""Seeded programs, each run twice: by make_generator_fixtures.py with torch (which keeps what
they return) and by test_generator.py with attograd, which must return the same values bit for
bit. Each case takes the module (torch or attograd) and returns a dict of name -> tensor. Only
what both modules have is used; the cases are written here, in our own words."""

import math


def seeded_factories(torch):
    torch.manual_seed(0)
    out = {
        "rand": torch.rand(3, 5),
        "rand_f64": torch.rand(40, dtype=torch.float64),
        "randn_small": torch.randn(7),  # one by one: leaves the second half of a pair kept
        "randn_after_small": torch.randn(3),  # starts with the kept half
        "randn_blocks": torch.randn(4, 9),  # 36 values: torch's blocks of 16 and the redrawn tail
        "randn_f64": torch.randn(20, dtype=torch.float64),
        "randint": torch.randint(0, 10, (50,)),
        "randint_high_only": torch.randint(7, (2, 3)),
        "randint_wide": torch.randint(-(2**40), 2**40, (10,)),
        "randint_float": torch.randint(3, 9, (6,), dtype=torch.float32),
        "randperm": torch.randperm(30),
        "randperm_f32": torch.randperm(5, dtype=torch.float32),
    }
    x = torch.zeros(2, 3)
    out["rand_like"] = torch.rand_like(x)
    out["randn_like"] = torch.randn_like(x)
    out["randint_like"] = torch.randint_like(x, 4, 8)
    out["normal_numbers"] = torch.normal(2.0, 3.0, (6,))
    out["normal_tensor_mean"] = torch.normal(torch.arange(4.0), 0.5)
    out["normal_tensor_std"] = torch.normal(1.0, torch.arange(1.0, 5.0))
    out["normal_tensors"] = torch.normal(torch.arange(4.0), torch.arange(1.0, 5.0))
    return out


def in_place_draws(torch):
    torch.manual_seed(1)
    out = {}
    out["normal_"] = torch.empty(20).normal_(0.5, 2.0)
    out["normal_small"] = torch.empty(3).normal_(-1.0, 0.1)
    out["uniform_"] = torch.empty(30).uniform_(-0.25, 0.75)
    out["uniform_f64"] = torch.empty(10, dtype=torch.float64).uniform_(2, 5)
    out["random_to"] = torch.empty(8, dtype=torch.int64).random_(100)
    out["random_from_to"] = torch.empty(8).random_(-3, 3)
    out["random_default"] = torch.empty(8, dtype=torch.float64).random_()
    out["bernoulli_"] = torch.empty(40).bernoulli_(0.25)
    out["bernoulli_tensor_p"] = torch.empty(2, 4).bernoulli_(torch.tensor([0.1, 0.5, 0.9, 1.0]))
    out["exponential_"] = torch.empty(12).exponential_(3.0)
    out["bernoulli"] = torch.bernoulli(torch.full((2, 5), 0.4))
    out["bernoulli_p"] = torch.bernoulli(torch.zeros(6), 0.7)
    out["bernoulli_method"] = torch.full((4,), 0.5).bernoulli()
    t = torch.empty(4, 6).t()  # not contiguous: drawn in memory order
    out["normal_transposed"] = t.normal_().contiguous()
    return out


def generators(torch):
    g = torch.Generator().manual_seed(123)
    out = {"with_generator": torch.randn(5, generator=g)}
    torch.manual_seed(123)
    out["default_after_same_seed"] = torch.randn(5)  # the same stream
    out["generator_randint"] = torch.randint(0, 5, (5,), generator=g)
    out["generator_randperm"] = torch.randperm(6, generator=g)
    out["generator_normal_"] = torch.empty(4).normal_(generator=g)
    out["generator_multinomial"] = torch.multinomial(torch.tensor([0.2, 0.3, 0.5]), 4, True, generator=g)
    state = g.get_state()
    first = torch.rand(4, generator=g)
    g.set_state(state)
    out["state_restored"] = torch.stack([first, torch.rand(4, generator=g)])
    torch.manual_seed(7)
    state = torch.get_rng_state()
    a = torch.randn(2)
    torch.set_rng_state(state)
    out["rng_state_restored"] = torch.stack([a, torch.randn(2)])
    out["initial_seed"] = torch.tensor([torch.initial_seed(), g.initial_seed()])
    torch.manual_seed(-1)  # negative seeds wrap to 64 bits
    out["negative_seed"] = torch.rand(2)
    return out


def sampling(torch):
    torch.manual_seed(2)
    probs = torch.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 2.0, 3.0, 4.0]])
    return {
        "multinomial_replacement": torch.multinomial(probs, 12, replacement=True),
        "multinomial_no_replacement": torch.multinomial(probs[1], 3),
        "multinomial_one": torch.multinomial(probs, 1),
        "multinomial_method": probs.multinomial(2),
        "multinomial_f64": torch.multinomial(probs.double(), 5, True),
    }


def dropout(torch):
    torch.manual_seed(3)
    x = torch.randn(4, 8)
    drop = torch.nn.Dropout(0.3)
    out = {"module": drop(x), "functional": torch.nn.functional.dropout(x, 0.5)}
    drop.eval()
    out["eval"] = drop(x)
    out["then"] = torch.rand(2)
    return out


def init_functions(torch):
    init = torch.nn.init
    torch.manual_seed(4)
    w = torch.empty(5, 7)
    out = {}
    for name, fill in [
        ("uniform_", lambda: init.uniform_(w, -0.5, 0.2)),
        ("normal_", lambda: init.normal_(w, 0.1, 0.02)),
        ("xavier_uniform_", lambda: init.xavier_uniform_(w, gain=init.calculate_gain("relu"))),
        ("xavier_normal_", lambda: init.xavier_normal_(w)),
        ("kaiming_uniform_", lambda: init.kaiming_uniform_(w, a=math.sqrt(5))),
        ("kaiming_uniform_fan_out", lambda: init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu")),
        ("kaiming_normal_", lambda: init.kaiming_normal_(w, nonlinearity="tanh")),
        ("trunc_normal_", lambda: init.trunc_normal_(w, std=0.02)),
        ("trunc_normal_wide_std", lambda: init.trunc_normal_(w, mean=0.0, std=1.5, a=-1.0, b=1.0)),  # redraws
        ("trunc_normal_narrow", lambda: init.trunc_normal_(w, mean=0.0, std=1.0, a=1.0, b=1.5)),  # rejection
        ("sparse_", lambda: init.sparse_(w, 0.4)),
    ]:
        fill()
        out[name] = w.clone()
    g = torch.Generator().manual_seed(9)
    out["with_generator"] = init.normal_(torch.empty(20), generator=g).clone()
    return out


def module_init(torch):
    nn = torch.nn
    torch.manual_seed(5)
    lin = nn.Linear(6, 4)
    emb = nn.Embedding(11, 5)
    norm = nn.LayerNorm(5)
    mha = nn.MultiheadAttention(8, 2)
    head = nn.Linear(5, 3, bias=False)
    lin64 = nn.Linear(3, 2, dtype=torch.float64)
    return {
        "linear.weight": lin.weight, "linear.bias": lin.bias, "embedding.weight": emb.weight,
        "layer_norm.weight": norm.weight, "layer_norm.bias": norm.bias,
        "mha.in_proj_weight": mha.in_proj_weight, "mha.in_proj_bias": mha.in_proj_bias,
        "mha.out_proj.weight": mha.out_proj.weight, "mha.out_proj.bias": mha.out_proj.bias,
        "head.weight": head.weight, "linear64.weight": lin64.weight, "linear64.bias": lin64.bias,
        "then": torch.rand(3),
    }


CASES = [seeded_factories, in_place_draws, generators, sampling, dropout, init_functions, module_init]
