"""Hardening, class 10: `device=`. Every device argument goes through one function
(attograd/_device.py): the CPU (any index) passes; 'cuda' raises what a CPU-only build of torch
raises, before any work; a string torch cannot parse raises torch's RuntimeError; anything that
is no device torch's TypeError. Before, the factories ignored device= and returned CPU tensors."""

import pytest

import attograd as torch

FACTORIES = {
    "tensor": lambda d: torch.tensor([1.0], device=d),
    "as_tensor": lambda d: torch.as_tensor([1.0], device=d),
    "zeros": lambda d: torch.zeros(3, device=d),
    "ones": lambda d: torch.ones(3, device=d),
    "empty": lambda d: torch.empty(3, device=d),
    "full": lambda d: torch.full((3,), 1.0, device=d),
    "rand": lambda d: torch.rand(3, device=d),
    "randn": lambda d: torch.randn(3, device=d),
    "randint": lambda d: torch.randint(0, 5, (3,), device=d),
    "arange": lambda d: torch.arange(3, device=d),
    "linspace": lambda d: torch.linspace(0, 1, 3, device=d),
    "eye": lambda d: torch.eye(3, device=d),
    "zeros_like": lambda d: torch.zeros_like(torch.ones(2), device=d),
    "ones_like": lambda d: torch.ones_like(torch.ones(2), device=d),
    "empty_like": lambda d: torch.empty_like(torch.ones(2), device=d),
    "full_like": lambda d: torch.full_like(torch.ones(2), 3.0, device=d),
    "rand_like": lambda d: torch.rand_like(torch.ones(2), device=d),
    "randn_like": lambda d: torch.randn_like(torch.ones(2), device=d),
    "randint_like": lambda d: torch.randint_like(torch.ones(2), 5, device=d),
    "new_zeros": lambda d: torch.ones(2).new_zeros(3, device=d),
    "Tensor.to": lambda d: torch.ones(2).to(d),
    "Tensor.to(device=)": lambda d: torch.ones(2).to(device=d),
    "Module.to": lambda d: torch.nn.Linear(2, 2).to(d),
    "Linear": lambda d: torch.nn.Linear(2, 2, device=d),
    # torch.device("cuda") itself is allowed on a CPU-only torch; a tensor put there is not.
    "device": lambda d: torch.zeros(1, device=torch.device(d)),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_cuda_is_what_a_cpu_only_torch_raises(name):
    for d in ("cuda", "cuda:0", 0):
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            FACTORIES[name](d)


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_a_garbage_string_is_torchs_runtime_error(name):
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, .* device type at start of device string: garbage"):
        FACTORIES[name]("garbage")


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_the_cpu_passes(name):
    for d in ("cpu", "cpu:0", torch.device("cpu"), b"cpu", None):
        if d is None and name in ("Tensor.to", "device"):
            continue
        FACTORIES[name](d)


@pytest.mark.parametrize("spec, error, message", [
    ("", RuntimeError, "Device string must not be empty"),
    ("CPU", RuntimeError, "Expected one of cpu"),
    ("cpu ", RuntimeError, "Invalid device string: 'cpu '"),
    ("cpu:", RuntimeError, "Invalid device string: 'cpu:'"),
    ("cpu:01", RuntimeError, "Invalid device string: 'cpu:01'"),
    (":0", RuntimeError, "Invalid device string: ':0'"),
    ("cpu:0:0", RuntimeError, "Invalid device string: 'cpu:0:0'"),
    (-1, RuntimeError, "Device index must not be negative"),
    (3.5, TypeError, "must be torch.device, not float"),
    (True, TypeError, "must be torch.device, not bool"),
    ([], TypeError, "must be torch.device, not list"),
    ("mps", RuntimeError, "PyTorch is not linked with support for mps devices"),
    ("meta", RuntimeError, "PyTorch is not linked with support for meta devices"),
])
def test_one_function_parses_as_torch_does(spec, error, message):
    from attograd import _device

    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        _device.check_device(spec)
    with pytest.raises(error):
        torch.zeros(2, device=spec)


def test_the_tensor_made_on_the_cpu_is_a_cpu_tensor():
    t = torch.zeros(2, device="cpu:0")
    assert t.device == torch.device("cpu") and str(t.device) == "cpu"
    assert torch.device("cpu", 0).index == 0
    with pytest.raises(RuntimeError, match="must not include an index"):
        torch.device("cpu:1", 2)
