"""attograd.backends: the GEMM provider a Python training loop runs on, chosen by name or as the
command's --gemm auto chooses; the products agree whichever runs them."""

import numpy as np
import pytest

import attograd
from attograd import backends


@pytest.fixture
def provider_restored():
    before = backends.get_gemm_provider()
    yield
    backends.set_gemm_provider(before)


def test_each_provider_that_runs_here_gives_the_same_product(provider_restored):
    available = [name for name, why in backends.gemm_providers().items() if why is None]
    assert "openblas" in available
    attograd.manual_seed(0)
    a, b = attograd.randn(33, 17), attograd.randn(17, 9)
    expected = a.double().numpy() @ b.double().numpy()
    for name in available:
        assert backends.set_gemm_provider(name) == f"--gemm {name}"
        assert backends.get_gemm_provider() == name
        np.testing.assert_allclose((a @ b).numpy(), expected, rtol=1e-4, atol=1e-5)


def test_auto_measures_at_the_models_shapes(provider_restored):
    model = attograd.models.make("abcdefgh", n_layer=1, n_head=2, n_embd=32, block_size=16, seed=1)
    how = backends.set_gemm_provider("auto", model=model, tokens=4 * 16)
    chosen = backends.get_gemm_provider()
    other = "openblas" if chosen == "onednn" else "onednn"
    assert how.startswith("chosen by --gemm auto: ") and f" against {other}'s " in how, how


def test_bad_names_and_arguments_are_refused(provider_restored):
    with pytest.raises(ValueError, match=r"unknown GEMM provider 'mkl' \(auto, openblas or onednn\)"):
        backends.set_gemm_provider("mkl")
    with pytest.raises(ValueError, match=r"needs model="):
        backends.set_gemm_provider("auto")
    with pytest.raises(TypeError, match="language model from attograd.models"):
        backends.set_gemm_provider("auto", model=attograd.nn.Linear(2, 2), tokens=8)
    for name, why in backends.gemm_providers().items():
        if why is not None:
            with pytest.raises(RuntimeError, match="cannot run here"):
                backends.set_gemm_provider(name)


def test_openblas_runs_the_kernels_the_command_runs():
    # On a CPU newer than the OpenBLAS (Debian's 0.3.21 falls back to its SSE3 "Prescott" kernels
    # on an Intel family 6, model 207), the command and the module both switch it to the kernels
    # the CPU can run (tuning/openblas_kernels.h); elsewhere both keep OpenBLAS's own.
    import os
    import subprocess
    import sys

    cli = os.environ.get("ATTOGRAD_CLI")
    if not cli:
        pytest.skip("ATTOGRAD_CLI (the attograd program) is not set; ctest sets it")
    version = subprocess.run([cli, "--version"], check=True, stdout=subprocess.PIPE, text=True).stdout
    command_core = version.splitlines()[0].rsplit("OpenBLAS core ", 1)[1]
    probe = ("import ctypes, attograd\n"
             "lib = ctypes.CDLL('libopenblas.so.0')\n"
             "lib.openblas_get_corename.restype = ctypes.c_char_p\n"
             "print(lib.openblas_get_corename().decode())\n")
    module_core = subprocess.run([sys.executable, "-c", probe], check=True, stdout=subprocess.PIPE,
                                 text=True).stdout.strip()
    assert module_core == command_core
