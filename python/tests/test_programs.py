"""The learner programs (python/tests/programs/: the lecture's bigram and GPT, nanoGPT's model and
training step, minGPT's model and Trainer, makemore's Bigram and MLP, PyTorch's polynomial
tutorials) run with attograd as their ``torch``, on the weights and batches torch drew, and
compute what torch computed (fixtures/programs.*, made by make_program_fixtures.py): the same
losses, gradients and gradient norms, logits, trained weights, greedy tokens and printed lines, to
float32 round-off.

attograd's generator is torch's (test_generator.py), so what the programs draw themselves comes
out as torch's: the tokens sampled with torch.multinomial after torch.manual_seed are torch's, token
for token, and makemore's split by torch.randperm, its initial weights and its batches drawn with
torch.randint are torch's when it runs from the seed alone."""

import json
import math
import os
import re

import numpy as np
import pytest

import attograd
from conftest import FIXTURES
from programs import (Log, Record, Replay, cut_to_top_k, lecture_bigram, lecture_gpt, makemore, mingpt, nanogpt,
                      tutorial_polynomials)

T = attograd
SAMPLE_TOKENS = 24  # as make_program_fixtures.py
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


@pytest.fixture(scope="module")
def runs():
    with open(os.path.join(FIXTURES, "programs.json")) as f:
        tables = json.load(f)
    with np.load(os.path.join(FIXTURES, "programs.npz")) as f:
        arrays = dict(f)
    return tables, arrays


def state(arrays, prefix):
    return {k[len(prefix) + 1:]: T.tensor(v) for k, v in arrays.items() if k.startswith(prefix + "/")}


def same_lines(got, want, rtol=2e-4, atol=1e-4):
    """Printed lines equal, the numbers in them to float32 round-off."""
    assert len(got) == len(want), f"{got}\nvs torch's\n{want}"
    for g, w in zip(got, want):
        assert NUMBER.sub("#", g) == NUMBER.sub("#", w), f"{g!r} vs torch's {w!r}"
        for a, b in zip(NUMBER.findall(g), NUMBER.findall(w)):
            assert math.isclose(float(a), float(b), rel_tol=rtol, abs_tol=atol), f"{g!r} vs torch's {w!r}"


def same_state(model, arrays, prefix, rtol=1e-4, atol=2e-6):
    want = {k[len(prefix) + 1:]: v for k, v in arrays.items() if k.startswith(prefix + "/")}
    got = model.state_dict()
    assert sorted(got) == sorted(want)
    for k, v in want.items():
        np.testing.assert_allclose(got[k].numpy(), v, rtol=rtol, atol=atol, err_msg=k)


def run_lm(runs, name, program, **kwargs):
    tables, arrays = runs
    entry = tables[name]
    log = Log()
    draws = Replay(entry["draws"])
    out = program(T, draws, log, init_state=state(arrays, f"{name}/initial"), **entry["kwargs"], **kwargs)
    assert draws.at == len(draws.draws), "the program drew fewer batches than torch's run"
    np.testing.assert_allclose(out["losses"], entry["losses"], rtol=2e-5, atol=1e-6)
    same_state(out["model"], arrays, f"{name}/final")
    return out, entry, log


def test_lecture_bigram(runs):
    out, entry, log = run_lm(runs, "bigram", lecture_bigram.program)
    same_lines(log, entry["log"][:-1])  # the last line is the sample


def test_lecture_gpt(runs):
    out, entry, log = run_lm(runs, "gpt", lecture_gpt.program)
    np.testing.assert_allclose(out["estimates"], entry["estimates"], rtol=2e-5)
    same_lines(log, entry["log"][:-1])


@pytest.mark.parametrize("name", ["nanogpt", "nanogpt_manual_attention"])
def test_nanogpt_model_and_training_step(runs, name):
    out, entry, log = run_lm(runs, name, nanogpt.program)
    arrays = runs[1]
    np.testing.assert_allclose(out["norms"], entry["norms"], rtol=5e-5)
    assert out["lrs"] == entry["lrs"] and out["num_params"] == entry["num_params"]
    assert math.isclose(out["mfu"], entry["mfu"], rel_tol=1e-12)
    np.testing.assert_allclose(out["last_logits"].numpy(), arrays[f"{name}/last_logits"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out["cropped_logits"].numpy(), arrays[f"{name}/cropped_logits"], rtol=1e-4, atol=1e-5)
    same_lines(log, entry["log"])


def test_mingpt_model_trainer_and_greedy_generate(runs):
    out, entry, log = run_lm(runs, "mingpt", mingpt.program)
    assert out["greedy"] == entry["greedy"]  # topk(probs, k=1) at every step
    assert out["decay_groups"] == entry["decay_groups"]
    same_lines(log, entry["log"])


def test_top_k_cut_of_the_gpts_sampling(runs):
    # the cut before multinomial, on scores of one row per batch entry: all but each row's 2 best
    # (ties with the 2nd kept) become -inf, through topk, a list index and a masked assignment.
    scores = T.tensor([[0.5, 2.0, -1.0, 3.0, 2.0], [1.0, 0.0, 4.0, -2.0, 0.5]])
    with T.no_grad():
        cut_to_top_k(T, scores, 2)
        probs = T.nn.functional.softmax(scores, dim=-1)
    inf = float("-inf")
    assert scores.tolist() == [[inf, 2.0, inf, 3.0, 2.0], [1.0, inf, 4.0, inf, inf]]
    assert probs[0, 0].item() == 0.0 and math.isclose(probs[1].sum().item(), 1.0, rel_tol=1e-6)


@pytest.mark.parametrize("name,program", [("bigram", lecture_bigram.program), ("gpt", lecture_gpt.program),
                                          ("nanogpt", nanogpt.program), ("mingpt", mingpt.program)])
def test_sampling_draws_torchs_tokens(runs, name, program):
    tables, arrays = runs
    entry = tables[name]
    out = program(T, Replay(entry["draws"]), Log(), init_state=state(arrays, f"{name}/initial"),
                  sample_tokens=SAMPLE_TOKENS, **entry["kwargs"])
    assert out["sample"] == entry["sample"]


MAKEMORE = ["makemore_mlp", "makemore_bigram"]


def run_makemore(runs, name, from_seed):
    """makemore's program on attograd after torch's seed: on torch's initial weights and batches,
    or (from_seed) on the weights its own modules draw and the batches its own randint draws."""
    tables, arrays = runs
    entry = tables[name]
    log = Log()
    T.manual_seed(entry["seed"])
    if from_seed:
        draws = Record()
        out = makemore.program(T, draws, log, **entry["kwargs"])
        assert draws.draws == entry["draws"], "randint drew other batches than torch's"
    else:
        draws = Replay(entry["draws"])
        out = makemore.program(T, draws, log, init_state=state(arrays, f"{name}/initial"), **entry["kwargs"])
        assert draws.at == len(draws.draws), "the program drew fewer batches than torch's run"
    assert out["split"] == entry["split"]  # torch.randperm's order
    return out, entry, log


@pytest.mark.parametrize("name", MAKEMORE)
def test_makemore_training_evaluation_and_generation(runs, name):
    arrays = runs[1]
    out, entry, log = run_makemore(runs, name, from_seed=False)
    np.testing.assert_allclose(out["losses"], entry["losses"], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(out["evaluations"], entry["evaluations"], rtol=2e-5)
    for k, g in out["first_grads"].items():
        np.testing.assert_allclose(g.numpy(), arrays[f"{name}/first_grads/{k}"], rtol=1e-4, atol=1e-6, err_msg=k)
    same_state(out["model"], arrays, f"{name}/final")
    assert out["greedy"] == entry["greedy"]  # topk(probs, k=1), cropped at the end token
    assert out["sample"] == entry["sample"]  # multinomial after a temperature and a top-k cut
    same_lines(log, entry["log"])


@pytest.mark.parametrize("name", MAKEMORE)
def test_makemore_from_the_seed_alone(runs, name):
    # no fixture weights or batches: the modules' init and randint draw what torch drew
    arrays = runs[1]
    out, entry, log = run_makemore(runs, name, from_seed=True)
    for k, v in out["initial"].items():
        np.testing.assert_array_equal(v.numpy(), arrays[f"{name}/initial/{k}"], err_msg=k)
    np.testing.assert_allclose(out["losses"], entry["losses"], rtol=2e-5, atol=1e-6)
    assert out["sample"] == entry["sample"]
    same_lines(log, entry["log"])


def test_makemore_targets_past_the_end_count_for_nothing():
    # x starts with the token 0, y ends the word with 0 and then holds -1 (ignore_index)
    words = makemore.Words(T, ["ab", "b"], {"a": 1, "b": 2}, 3)
    assert words.x.tolist() == [[0, 1, 2], [0, 2, 0]]
    assert words.y.tolist() == [[1, 2, 0], [2, 0, -1]]
    scores = T.randn(2, 3, 3)
    F = T.nn.functional
    skipped = F.cross_entropy(scores.view(-1, 3), words.y.view(-1), ignore_index=-1)
    kept = F.cross_entropy(scores.view(-1, 3)[:5], words.y.view(-1)[:5])
    assert math.isclose(skipped.item(), kept.item(), rel_tol=1e-6)


def test_tutorial_autograd_by_hand(runs):
    entry = runs[0]["tutorial"]["autograd_by_hand"]
    log = Log()
    try:
        result = tutorial_polynomials.autograd_by_hand(T, log, entry["start"])
    finally:
        T.set_default_device("cpu")
    np.testing.assert_allclose(result, entry["result"], rtol=2e-4, atol=1e-6)
    same_lines(log, entry["log"], rtol=2e-4)


def test_tutorial_custom_function(runs):
    entry = runs[0]["tutorial"]["custom_function"]
    log = Log()
    np.testing.assert_allclose(tutorial_polynomials.custom_function(T, log), entry["result"], rtol=2e-4, atol=1e-7)
    same_lines(log, entry["log"], rtol=2e-4, atol=1e-7)


@pytest.mark.parametrize("name", ["nn_by_hand", "nn_with_optim", "module", "dynamic_net"])
def test_tutorial_nn(runs, name):
    tables, arrays = runs
    entry = tables["tutorial"][name]
    log = Log()
    result = getattr(tutorial_polynomials, name)(T, log, state(arrays, f"tutorial/{name}"))
    np.testing.assert_allclose(result, entry["result"], rtol=2e-4, atol=1e-6)
    same_lines(log, entry["log"], rtol=2e-4, atol=1e-6)


def test_the_tutorials_zeroing_by_assignment_raises_as_in_torch():
    # polynomial_autograd.py's latest version resets the gradients with `a.grad = 0.`, which torch
    # refuses; the programs here set them to None (the version before).
    a = T.randn((), requires_grad=True)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None but got grad of type float"):
        a.grad = 0.0
