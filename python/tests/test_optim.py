"""attograd.optim as torch's: param_groups are dicts the user changes between steps, errors are
ValueError with the C++ message, the state is per parameter, schedulers write each group's lr."""

import pytest

import attograd
import attograd.nn as nn


def model_and_grad():
    lin = nn.Linear(2, 1)
    lin(attograd.tensor([[1.0, -2.0]])).sum().backward()
    return lin


def test_param_group_dicts_drive_the_step():
    lin = model_and_grad()
    opt = attograd.optim.SGD(lin.parameters(), lr=0.1)
    w = lin.weight.clone()
    opt.param_groups[0]["lr"] = 0.0
    opt.step()
    assert attograd.equal(w, lin.weight)
    opt.param_groups[0]["lr"] = 1.0
    opt.step()
    assert attograd.allclose(lin.weight, w - lin.weight.grad)


def test_bad_options_and_parameters_are_value_errors():
    lin = model_and_grad()
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        attograd.optim.SGD(lin.parameters(), lr=-1)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        attograd.optim.Adam([])
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        attograd.optim.AdamW([lin.weight * 2])
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        attograd.optim.Muon([lin.bias])
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        attograd.optim.SGD(lin.weight)
    opt = attograd.optim.Adam(lin.parameters())
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": []})


def test_state_closure_and_added_groups():
    lin = model_and_grad()
    opt = attograd.optim.AdamW([lin.weight], lr=0.01)
    calls = []

    def closure():
        calls.append(attograd.is_grad_enabled())
        return lin(attograd.ones(1, 2)).sum()

    with attograd.no_grad():
        loss = opt.step(closure)
    assert calls == [True] and loss.requires_grad
    assert sorted(opt.state[lin.weight]) == ["exp_avg", "exp_avg_sq", "step"]
    assert opt.state[lin.weight]["step"].item() == 1
    opt.add_param_group({"params": lin.bias, "lr": 0.5})
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["weight_decay"] == 0.01
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]] and list(sd["state"]) == [0]
    opt.zero_grad()
    assert lin.weight.grad is None


def test_schedulers_write_the_groups_lr():
    lin = model_and_grad()
    opt = attograd.optim.SGD([{"params": [lin.weight]}, {"params": [lin.bias], "lr": 1.0}], lr=0.1)
    sched = attograd.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 1.0]
    opt.step()
    sched.step()
    assert sched.get_last_lr() == [0.05, 0.5] and opt.param_groups[1]["lr"] == 0.5 and sched.last_epoch == 1
    opt.param_groups[0]["lr"] = 1.0  # chainable, as torch's: the next step starts from the group's lr
    sched.step()
    assert opt.param_groups[0]["lr"] == 0.5
    lam = attograd.optim.lr_scheduler.LambdaLR(attograd.optim.SGD([lin.weight], lr=2.0), lambda e: 1 / (e + 1))
    lam.step()
    assert lam.get_last_lr() == [1.0]
    with pytest.raises(NotImplementedError, match="last_epoch"):
        attograd.optim.lr_scheduler.StepLR(opt, 1, last_epoch=3)
