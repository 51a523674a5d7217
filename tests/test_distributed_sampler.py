"""DistributedSampler: index lists, padding and drop_last as PyTorch's; shuffling seeded per epoch."""
import math

import pytest

import ember
from ember.utils.data import DataLoader, DistributedSampler, TensorDataset

SIZES = [0, 1, 2, 5, 7, 10, 11, 16]
REPLICAS = [1, 2, 3, 4, 8]


def _cases():
    for size in SIZES:
        for replicas in REPLICAS:
            for drop_last in (False, True):
                yield size, replicas, drop_last


@pytest.mark.parametrize("size,replicas,drop_last", list(_cases()))
def test_unshuffled_indices_match_pytorch(size, replicas, drop_last):
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    data = list(range(size))
    for rank in range(replicas):
        ours = DistributedSampler(data, num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
        theirs = TorchSampler(data, num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)
        assert ours.total_size == theirs.total_size


def _pytorch_split(permutation, replicas, rank, drop_last):
    """PyTorch's padding / trimming and striding, applied by torch's own sampler to a given order."""
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    theirs = TorchSampler(permutation, num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
    return [permutation[i] for i in theirs]


@pytest.mark.parametrize("size,replicas,drop_last", [(10, 3, False), (10, 3, True), (2, 4, False), (17, 4, True)])
def test_shuffled_split_is_pytorchs_split_of_the_seeded_permutation(size, replicas, drop_last):
    """Ember's generator differs from PyTorch's, so the permutation is Ember's; everything after it is checked
    against torch's sampler run on that permutation."""
    for epoch in (0, 3):
        generator = ember.Generator()
        generator.manual_seed(5 + epoch)
        permutation = ember.randperm(size, generator=generator).tolist()
        for rank in range(replicas):
            ours = DistributedSampler(range(size), num_replicas=replicas, rank=rank, seed=5, drop_last=drop_last)
            ours.set_epoch(epoch)
            assert list(ours) == _pytorch_split(permutation, replicas, rank, drop_last)


def test_shares_are_disjoint_and_cover_the_dataset():
    size, replicas = 23, 4
    shares = [list(DistributedSampler(range(size), replicas, rank, seed=1)) for rank in range(replicas)]
    assert all(len(s) == math.ceil(size / replicas) for s in shares)
    everything = sum(shares, [])
    assert set(everything) == set(range(size))
    assert len(everything) - len(set(everything)) == replicas * math.ceil(size / replicas) - size  # the padding


def test_drop_last_never_repeats_an_index():
    shares = [list(DistributedSampler(range(23), 4, rank, seed=1, drop_last=True)) for rank in range(4)]
    everything = sum(shares, [])
    assert len(everything) == len(set(everything)) == 20


def test_set_epoch_reshuffles_and_same_epoch_repeats():
    sampler = DistributedSampler(range(50), num_replicas=2, rank=0, seed=7)
    first = list(sampler)
    assert list(sampler) == first
    sampler.set_epoch(1)
    second = list(sampler)
    assert second != first
    assert sampler.epoch == 1
    other_seed = DistributedSampler(range(50), num_replicas=2, rank=0, seed=8)
    assert list(other_seed) != first


def test_ranks_agree_on_the_permutation():
    """Two ranks constructed independently split one permutation: no index is lost or duplicated."""
    a = list(DistributedSampler(range(40), 2, 0, seed=3))
    b = list(DistributedSampler(range(40), 2, 1, seed=3))
    assert sorted(a + b) == list(range(40))


def test_in_a_dataloader():
    dataset = TensorDataset(ember.arange(12))
    sampler = DistributedSampler(dataset, num_replicas=3, rank=2, shuffle=False)
    batches = [batch[0].tolist() for batch in DataLoader(dataset, batch_size=2, sampler=sampler)]
    assert batches == [[2, 5], [8, 11]]


@pytest.mark.parametrize("rank", [-1, 2, 5])
def test_invalid_rank(rank):
    with pytest.raises(ValueError, match=r"Invalid rank .*\[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=rank)


def test_invalid_num_replicas():
    with pytest.raises(ValueError, match="num_replicas"):
        DistributedSampler(range(4), num_replicas=0, rank=0)


def test_module_path_and_export():
    from ember.utils.data.distributed import DistributedSampler as FromModule
    assert FromModule is DistributedSampler
