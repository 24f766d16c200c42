"""The device surface of a CPU-only torch: torch.device as torch spells it, torch.cuda and
torch.backends.mps answering that nothing is there, set_default_device, and every way of asking
for another device raising what a CPU-only torch raises (its texts are those of torch's source:
torch/cuda/__init__.py's _lazy_init, ATen's pinned-memory allocator), before any work."""

import pytest

import attograd

T = attograd
NOT_COMPILED = "Torch not compiled with CUDA enabled"


def test_devices_as_torch_answers(view_tables):
    for expr, want in view_tables["devices"]:
        assert eval(expr, {"T": T}) == want, expr


def test_device_errors_are_torchs(view_tables):
    for expr, kind, message in view_tables["device_errors"]:
        with pytest.raises(Exception) as info:
            eval(expr, {"T": T})
        assert type(info.value).__name__ == kind and str(info.value) == message, expr


def test_the_lecture_picks_the_cpu():
    device = "cuda" if T.cuda.is_available() else "cpu"
    x = T.zeros(2, 3, dtype=T.long).to(device)
    assert device == "cpu" and x.device == T.device("cpu")
    assert T.tensor([1.0]).to(device, non_blocking=True).cpu().is_cpu


def test_asking_for_cuda_raises_a_cpu_only_torchs_error():
    x = T.ones(2)
    for ask in (lambda: x.cuda(), lambda: x.to("cuda"), lambda: x.to("cuda:0", T.float64), lambda: x.to(device="cuda"),
                lambda: x.to(0), lambda: T.nn.Linear(2, 2).to("cuda"), lambda: T.nn.Linear(2, 2).cuda(),
                lambda: T.cuda.current_device(), lambda: T.cuda.synchronize()):
        with pytest.raises(AssertionError, match=f"^{NOT_COMPILED}$"):
            ask()
    with pytest.raises(AssertionError, match="^Torch not compiled with XPU enabled$"):
        x.to("xpu")
    with pytest.raises(RuntimeError, match="^PyTorch is not linked with support for mps devices$"):
        x.to("mps")
    with pytest.raises(RuntimeError, match="^Cannot access accelerator device when none is available.$"):
        x.pin_memory()
    assert x.to("cpu") is x and x.to(T.device("cpu", 0)) is x and not x.is_pinned()


def test_what_a_cpu_only_torch_accepts_without_a_device():
    T.cuda.manual_seed(1)
    T.cuda.manual_seed_all(1)  # minGPT's set_seed
    T.cuda.empty_cache()
    assert T.cuda.memory_allocated() == 0 and not T.cuda.is_bf16_supported() and T.cuda.device_count() == 0
    assert T.accelerator.current_accelerator() is None and T.accelerator.device_count() == 0
    T.backends.cuda.matmul.allow_tf32 = True  # nanoGPT's train.py: kept, changes nothing
    T.backends.cudnn.allow_tf32 = True
    assert not T.backends.cudnn.is_available() and not T.backends.cuda.is_built()


def test_set_default_device():
    try:
        T.set_default_device("cpu")
        assert T.get_default_device() == T.device("cpu")
        T.set_default_device("cuda")  # accepted, as torch's; using it is what raises
        assert T.get_default_device() == T.device("cuda")
    finally:
        T.set_default_device("cpu")
    assert T.get_default_device() == T.device("cpu")
