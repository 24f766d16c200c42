"""attograd.nn's Module as torch's: registration by attribute, names and order, state dicts with
torch's messages, modes, conversions, hooks, containers, and the C++ layers sharing their
tensors with Python (an assignment reaches the C++ forward; a deepcopy is independent)."""

import copy
import gc
import weakref

import pytest

import attograd
import attograd.nn as nn
import attograd.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(2, 8)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(8, 1)
        self.gain = nn.Parameter(attograd.ones(1))
        self.register_buffer("scale", attograd.tensor(2.0))

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale * self.gain


def test_registration_names_and_order_are_torchs():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["gain", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert list(net.state_dict()) == ["gain", "scale", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "act", "fc2"]
    assert all(isinstance(p, nn.Parameter) for p in net.parameters())
    assert net.fc1.weight is net.fc1._cpp.weight  # the C++ layer's own tensor, one Python object
    shared = nn.Sequential(net.fc1, net.fc1)
    assert len(list(shared.parameters())) == 2  # a shared module's parameters once


def test_assignment_rules_and_messages():
    net = Net()
    with pytest.raises(TypeError, match=r"cannot assign 'attograd.FloatTensor' as parameter 'gain' \(attograd.nn.Parameter"):
        net.gain = attograd.ones(1)
    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        class Early(nn.Module):
            def __init__(self):
                self.w = nn.Parameter(attograd.ones(1))
        Early()
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        net.nope
    net.gain = None  # allowed, as torch: the parameter is gone from the list
    assert "gain" not in dict(net.named_parameters())
    del net.act
    assert [n for n, _ in net.named_children()] == ["fc1", "fc2"]


def test_parameter_assigned_to_a_cpp_layer_reaches_its_forward():
    lin = nn.Linear(2, 3)
    lin.weight = nn.Parameter(attograd.ones(3, 2))
    lin.bias = None
    assert lin._cpp.weight is lin.weight and lin._cpp.bias is None
    assert lin(attograd.tensor([[1.0, 2.0]])).tolist() == [[3.0, 3.0, 3.0]]
    assert repr(lin) == "Linear(in_features=2, out_features=3, bias=False)"
    with pytest.raises(AttributeError, match="cannot take a new parameter 'extra'"):
        lin.extra = nn.Parameter(attograd.ones(1))


def test_state_dict_round_trip_and_torchs_errors():
    a, b = Net(), Net()
    assert repr(b.load_state_dict(a.state_dict())) == "<All keys matched successfully>"
    assert attograd.equal(a.fc1.weight, b.fc1.weight) and a.fc1.weight is not b.fc1.weight
    sd = a.state_dict()
    assert sd["fc1.weight"].requires_grad is False  # detached, sharing memory
    missing = {k: v for k, v in sd.items() if k != "fc2.bias"}
    with pytest.raises(RuntimeError) as e:
        b.load_state_dict(missing)
    assert str(e.value) == 'Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "fc2.bias". '
    keys = b.load_state_dict({**missing, "extra": attograd.zeros(1)}, strict=False)
    assert keys.missing_keys == ["fc2.bias"] and keys.unexpected_keys == ["extra"]
    before = b.fc1.weight.clone()
    with pytest.raises(RuntimeError, match=r"size mismatch for fc1.weight: copying a param with shape "
                                           r"attograd.Size\(\[8, 3\]\) from checkpoint, the shape in current model is "
                                           r"attograd.Size\(\[8, 2\]\)"):
        b.load_state_dict({**sd, "fc1.weight": attograd.zeros(8, 3), "fc2.bias": attograd.zeros(1) + 5})
    assert attograd.equal(b.fc1.weight, before)  # nothing copied when it raises
    assert b.fc2.bias.item() != 5


def test_train_eval_reach_the_cpp_layers():
    net = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5), nn.MultiheadAttention(2, 1))
    assert net.eval() is net
    assert not net[0].training and not net[0]._cpp.training and not net[2]._cpp.training
    net.train()
    assert net[2]._cpp.training and net[1].training
    x = attograd.ones(200)
    assert (net[1](x) == 0).any() and attograd.equal(net[1].eval()(x), x)


def test_double_converts_in_place_and_zero_grad_drops_grads():
    net = Net()
    w = net.fc1.weight
    net(attograd.randn(3, 2)).sum().backward()
    assert net.double() is net
    assert w.dtype == attograd.float64 and net.fc1._cpp.weight is w and w.grad.dtype == attograd.float64
    assert net.scale.dtype == attograd.float64
    net(attograd.randn(3, 2, dtype=attograd.float64)).sum().backward()
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net.float()
    assert w.dtype == attograd.float32


def test_forward_hooks_and_call():
    lin = nn.Linear(2, 2)
    seen = []
    h = lin.register_forward_hook(lambda m, args, out: seen.append(tuple(out.shape)))
    lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    assert attograd.equal(lin(attograd.ones(1, 2)), lin.bias.expand(1, 2)) and seen == [(1, 2)]
    h.remove()
    lin(attograd.ones(1, 2))
    assert seen == [(1, 2)]
    with pytest.raises(NotImplementedError, match=r'Module \[Bare\] is missing the required "forward" function'):
        type("Bare", (nn.Module,), {})()(attograd.ones(1))


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear) and list(seq[1:]._modules) == ["1", "2"]
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.append(nn.Linear(1, 2))
    ml += [nn.Identity()]
    assert [n for n, _ in ml.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias"]
    md = nn.ModuleDict({"a": nn.Linear(1, 1)})
    md["b"] = nn.Linear(1, 1, bias=False)
    assert list(md.keys()) == ["a", "b"] and "b" in md
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias", "b.weight"]
    assert repr(seq).startswith("Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n  (1): ReLU()")


def test_deepcopy_is_independent():
    net = nn.Sequential(nn.Linear(2, 2), nn.LayerNorm(2), nn.MultiheadAttention(2, 1, bias=False))
    twin = copy.deepcopy(net)
    for (n, p), (m, q) in zip(net.named_parameters(), twin.named_parameters()):
        assert n == m and attograd.equal(p, q) and p is not q
    with attograd.no_grad():
        twin[0].weight.add_(1.0)
    assert not attograd.equal(net[0].weight, twin[0].weight)
    assert twin[0]._cpp.weight is twin[0].weight and twin[2].in_proj_bias is None


def test_a_module_with_a_hook_on_its_parameter_is_collected():
    lin = nn.Linear(2, 2)
    lin.weight.register_hook(lambda g: g * lin.bias.sum())  # a cycle through the C++ tensor
    gone = weakref.ref(lin)
    del lin
    gc.collect()
    assert gone() is None


def test_functional_checks():
    with pytest.raises(ValueError, match="nope is not a valid value for reduction"):
        F.mse_loss(attograd.ones(2), attograd.ones(2), reduction="nope")
    assert F.mse_loss(attograd.ones(2), attograd.zeros(2), size_average=False).item() == 2.0
    assert F.one_hot(attograd.tensor([0, 2])).tolist() == [[1, 0, 0], [0, 0, 1]]
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[3\]"):
        F.layer_norm(attograd.ones(2, 4), (3,))


def test_init_and_clipping():
    w = attograd.empty(300, 200)
    nn.init.xavier_uniform_(w)
    b = (6 / 500) ** 0.5
    assert -b <= w.min().item() and w.max().item() <= b and w.max().item() > 0.9 * b
    t = nn.init.trunc_normal_(attograd.empty(1000), std=1.0, a=-0.5, b=0.5)
    assert t.abs().max().item() <= 0.5 and t.std().item() > 0.2
    assert nn.init.calculate_gain("leaky_relu", 5 ** 0.5) == pytest.approx((1 / 3) ** 0.5)
    p = nn.Parameter(attograd.zeros(4))
    p.grad = attograd.tensor([3.0, 4.0, 0.0, 0.0])
    norm = nn.utils.clip_grad_norm_([p], 1.0)
    assert norm.item() == pytest.approx(5.0) and p.grad.norm().item() == pytest.approx(1.0, rel=1e-5)
    nn.utils.clip_grad_value_(p, 0.1)
    assert p.grad.max().item() <= 0.1 + 1e-7
