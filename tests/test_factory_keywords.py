"""PyTorch's factory keywords on Ember's creation functions: requires_grad, layout, pin_memory and, for empty
and the *_like functions, memory_format."""
from __future__ import annotations

import pytest

import ember


def test_layout_accepts_strided_and_refuses_others():
    assert ember.zeros(2, 3, layout=ember.strided).layout is ember.strided
    with pytest.raises(ValueError, match="zeros: layout=.* is not supported here: this factory makes strided"):
        ember.zeros(2, layout=ember.sparse_coo)
    with pytest.raises(TypeError, match=r"zeros\(\): argument 'layout' must be layout, not str"):  # as PyTorch
        ember.zeros(2, layout="sparse_coo")


def test_like_functions_preserve_a_channels_last_layout():
    x = ember.ones(2, 3, 4, 5).contiguous(memory_format=ember.channels_last)
    for like in (ember.empty_like, ember.zeros_like, ember.ones_like, ember.rand_like, ember.randn_like):
        out = like(x)
        assert out.is_contiguous(memory_format=ember.channels_last) and not out.is_contiguous(), like.__name__
    assert ember.zeros_like(x, memory_format=ember.contiguous_format).is_contiguous()
    assert ember.full_like(x, 2.0).is_contiguous(memory_format=ember.channels_last)


def test_empty_takes_a_memory_format_and_other_factories_do_not():
    assert ember.empty(2, 3, 4, 5, memory_format=ember.channels_last).stride() == (60, 1, 15, 3)
    with pytest.raises(TypeError, match="memory_format"):
        ember.arange(3, memory_format=ember.channels_last)


def test_requires_grad_and_pin_memory_compose_with_the_rest():
    t = ember.ones(3, dtype=ember.float64, requires_grad=True, layout=ember.strided)
    assert t.requires_grad and t.dtype is ember.float64
    if ember.accelerator.is_available():
        assert ember.zeros(2, pin_memory=True).tolist() == [0.0, 0.0]
    else:
        with pytest.raises(RuntimeError, match="accelerator"):
            ember.zeros(2, pin_memory=True)


def test_matches_torch_on_strides():
    torch = pytest.importorskip("torch")
    x = torch.ones(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    y = ember.ones(2, 3, 4, 5).contiguous(memory_format=ember.channels_last)
    assert torch.empty_like(x).stride() == ember.empty_like(y).stride()
    assert torch.empty(2, 3, 4, 5, memory_format=torch.channels_last).stride() == \
        ember.empty(2, 3, 4, 5, memory_format=ember.channels_last).stride()
