"""AdamW with nanoGPT's two parameter groups (decay, no decay) on the multi-tensor path: one ``_fused_adamw_``
call per group and step and no other op, each step's scalars made once per step count rather than once per
parameter, and PyTorch's values."""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import ember
from ember.dispatch import multi_tensor_step
from op_names import OpNames

torch = pytest.importorskip("torch")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))
from gpt import GPTConfig, gpt, gpt_optimizer  # noqa: E402

SMALL = GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16)


def _model_and_optimizer(lib, state=None):
    lib.manual_seed(0)
    model = gpt(lib, SMALL)
    if state is not None:
        model.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    return model, gpt_optimizer(lib, model, lr=1e-2)


def _set_grads(lib, model, step):
    rng = np.random.default_rng(step)
    for p in model.parameters():
        p.grad = lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32))


def test_two_groups_step_as_two_multi_tensor_calls_and_match_torch():
    theirs, theirs_opt = _model_and_optimizer(torch)
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    ours, ours_opt = _model_and_optimizer(ember, state)
    assert [len(g["params"]) for g in ours_opt.param_groups] == [len(g["params"]) for g in theirs_opt.param_groups]
    for step in range(3):
        _set_grads(ember, ours, step)
        _set_grads(torch, theirs, step)
        with OpNames() as seen:
            ours_opt.step()
        theirs_opt.step()
        if step:  # after the first step, which makes the state
            assert seen.names == ["_fused_adamw_", "_fused_adamw_"]
    for (name, a), b in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def test_a_steps_scalars_are_made_once_per_step_count():
    params = [np.zeros(3, np.float32) for _ in range(4)]
    work = multi_tensor_step("_fused_adamw_", ember.float32,
                             [params, params, params, params, [], [], 1e-3, 0.9, 0.99, 0.1, 1e-8, False, False,
                              [5, 5, 5, 2]])
    calls = []
    per_param = work.per_param
    work.per_param = lambda step: calls.append(step) or per_param(step)
    scalars = [work.scalars(i) for i in range(4)]
    assert calls == [5, 2]
    assert scalars[0] == scalars[2] and scalars[0] != scalars[3]
    assert scalars[3] == [*work.scalars(3)]  # the same values when asked again
