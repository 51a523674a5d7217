"""StackDataset against torch.utils.data.StackDataset: tuples or dicts of samples, lengths checked, and
batches through the DataLoader."""
from __future__ import annotations

import pytest

import ember
from ember.utils.data import DataLoader, StackDataset, TensorDataset


class _Batched:
    """A dataset with its own batch fetch, which StackDataset should use."""

    def __init__(self, n):
        self.n, self.batches = n, 0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i * 10

    def __getitems__(self, indices):
        self.batches += 1
        return [i * 10 for i in indices]


def test_tuple_and_dict_samples():
    x, y = ember.arange(5.0), ember.arange(5) * 2
    stacked = StackDataset(x, y)
    assert len(stacked) == 5 and stacked[3] == (x[3], y[3])
    named = StackDataset(data=x, label=y)
    assert named[1] == {"data": x[1], "label": y[1]} and set(named.datasets) == {"data", "label"}


def test_batches_use_each_datasets_own_batch_fetch():
    inner = _Batched(6)
    stacked = StackDataset(inner, list(range(6)))
    assert stacked.__getitems__([4, 1]) == [(40, 4), (10, 1)]
    assert inner.batches == 1
    loader = DataLoader(StackDataset(a=TensorDataset(ember.arange(6.0)), b=inner), batch_size=4)
    first = next(iter(loader))
    assert first["b"].tolist() == [0, 10, 20, 30] and first["a"][0].tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("args, kwargs, message", [
    ((), {}, "at least one dataset"),
    (([1, 2],), {"b": [1, 2]}, "not both"),
    (([1, 2], [1, 2, 3]), {}, r"size mismatch between datasets: their lengths are \[2, 3\]"),
])
def test_bad_arguments(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        StackDataset(*args, **kwargs)


def test_matches_torch():
    torch = pytest.importorskip("torch")
    ours = StackDataset([1, 2, 3], ["a", "b", "c"])
    theirs = torch.utils.data.StackDataset([1, 2, 3], ["a", "b", "c"])
    assert [ours[i] for i in range(3)] == [theirs[i] for i in range(3)]
    assert ours.__getitems__([2, 0]) == theirs.__getitems__([2, 0])
