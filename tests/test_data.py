"""ember.utils.data: datasets, samplers, collation and the DataLoader, in-process and with workers."""
from __future__ import annotations

import collections
import gc
import multiprocessing
import os
import signal
import time
import warnings

import numpy as np
import pytest

import ember
from ember.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset, IterableDataset,
                              RandomSampler, SequentialSampler, Subset, SubsetRandomSampler, TensorDataset,
                              WeightedRandomSampler, default_collate, default_convert, get_worker_info,
                              random_split)


# -- datasets used in worker processes (module level so that spawn can pickle them) --------------
class Squares(Dataset):
    """Sample i is {"i": i, "sq": tensor([i*i, i*i])}; optionally misbehaves at one index."""

    def __init__(self, n: int, fail_at: int | None = None, kill_at: int | None = None,
                 sleep_at: int | None = None, sleep_s: float = 0.0) -> None:
        self.n, self.fail_at, self.kill_at, self.sleep_at, self.sleep_s = n, fail_at, kill_at, sleep_at, sleep_s

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise ValueError(f"bad sample {i}: deliberately broken")
        if i == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if i == self.sleep_at:
            time.sleep(self.sleep_s)
        return {"i": i, "sq": ember.tensor([float(i * i)] * 2)}


class WhoAmI(Dataset):
    """Reports which process and worker produced each sample, and one draw of Ember's RNG."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return {"pid": os.getpid(), "worker": info.id, "num_workers": info.num_workers, "seed": info.seed,
                "mine": info.dataset is self, "draw": float(ember.rand(1)), "tag": getattr(self, "tag", "")}


class Stream(IterableDataset):
    """range(start, end), each worker taking its own contiguous shard via get_worker_info()."""

    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        lo, hi = self.start, self.end
        if info is not None:
            per = -(-(hi - lo) // info.num_workers)
            lo = lo + info.id * per
            hi = min(hi, lo + per)
        return iter(range(lo, hi))

    def __len__(self) -> int:
        return self.end - self.start


def tag_worker(worker_id: int) -> None:
    get_worker_info().dataset.tag = f"init-{worker_id}"


def failing_init(worker_id: int) -> None:
    raise KeyError(f"no config for worker {worker_id}")


def _assert_batches_equal(got, expected):
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        if isinstance(a, dict):
            assert a.keys() == b.keys()
            _assert_batches_equal(list(a.values()), list(b.values()))
        elif isinstance(a, (list, tuple)):
            _assert_batches_equal(a, b)
        elif isinstance(a, ember.Tensor):
            assert a.dtype == b.dtype and a.shape == b.shape and a.tolist() == b.tolist()
        else:
            assert a == b


def _no_children_left(deadline_s: float = 2.0) -> bool:
    gc.collect()  # iterators kept alive by reference cycles (tracebacks) shut their workers down here
    end = time.monotonic() + deadline_s
    while multiprocessing.active_children() and time.monotonic() < end:
        time.sleep(0.02)
    return not multiprocessing.active_children()


@pytest.fixture
def xy():
    x = ember.arange(30).reshape(10, 3).float()
    y = ember.arange(10)
    return x, y


# -- batching, shuffling, len ------------------------------------------------------------------
def test_batches_in_order_with_short_tail(xy):
    x, y = xy
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [b[0].shape[0] for b in batches] == [4, 4, 2]
    assert isinstance(batches[0], list) and batches[0][0].dtype == ember.float32 and batches[0][1].dtype == ember.int64
    assert batches[2][0].tolist() == x[8:].tolist() and batches[2][1].tolist() == [8, 9]


def test_drop_last(xy):
    loader = DataLoader(TensorDataset(*xy), batch_size=4, drop_last=True)
    assert len(loader) == 2
    assert [b[1].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_shuffle_is_a_permutation_reproducible_with_a_generator(xy):
    ds = TensorDataset(*xy)

    def epoch(loader):
        return [i for _, yb in loader for i in yb.tolist()]

    a = epoch(DataLoader(ds, batch_size=3, shuffle=True, generator=ember.Generator().manual_seed(7)))
    b = epoch(DataLoader(ds, batch_size=3, shuffle=True, generator=ember.Generator().manual_seed(7)))
    assert a == b and sorted(a) == list(range(10))
    loader = DataLoader(ds, batch_size=3, shuffle=True, generator=ember.Generator().manual_seed(7))
    epochs = [tuple(epoch(loader)) for _ in range(4)]
    assert len(set(epochs)) > 1  # reshuffled every epoch


def test_shuffle_without_generator_follows_manual_seed(xy):
    ds = TensorDataset(*xy)
    ember.manual_seed(123)
    a = [yb.tolist() for _, yb in DataLoader(ds, batch_size=5, shuffle=True)]
    ember.manual_seed(123)
    b = [yb.tolist() for _, yb in DataLoader(ds, batch_size=5, shuffle=True)]
    assert a == b


def test_no_auto_batching_converts_samples():
    class Arrays(Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return np.full(2, i, dtype=np.int32), "s"

    samples = list(DataLoader(Arrays(), batch_size=None))
    assert len(samples) == 3
    value, text = samples[1]
    assert isinstance(value, ember.Tensor) and value.dtype == ember.int32 and value.tolist() == [1, 1]
    assert text == "s"


def test_batch_sampler_argument(xy):
    loader = DataLoader(TensorDataset(*xy), batch_sampler=[[9, 0], [3]])
    assert len(loader) == 2 and [b[1].tolist() for b in loader] == [[9, 0], [3]]


@pytest.mark.parametrize("kwargs, message", [
    (dict(num_workers=-1), "num_workers"),
    (dict(timeout=-1), "timeout"),
    (dict(prefetch_factor=2), "prefetch_factor"),
    (dict(num_workers=1, prefetch_factor=-1), "prefetch_factor"),
    (dict(persistent_workers=True), "persistent_workers"),
    (dict(sampler=[0, 1], shuffle=True), "mutually exclusive"),
    (dict(batch_sampler=[[0]], batch_size=2), "mutually exclusive"),
    (dict(batch_size=None, drop_last=True), "drop_last"),
    (dict(multiprocessing_context="spawn"), "num_workers"),
    (dict(batch_size=0), "batch_size"),
])
def test_argument_validation(xy, kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataLoader(TensorDataset(*xy), **kwargs)


def test_iterable_dataset_validation_and_len():
    with pytest.raises(ValueError, match="shuffle"):
        DataLoader(Stream(0, 5), shuffle=True)
    with pytest.raises(ValueError, match="sampler"):
        DataLoader(Stream(0, 5), sampler=[0])
    assert len(DataLoader(Stream(0, 10), batch_size=3)) == 4
    assert len(DataLoader(Stream(0, 10), batch_size=3, drop_last=True)) == 3
    loader = DataLoader(Stream(0, 10), batch_size=3, drop_last=True)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]


def test_attributes_are_frozen(xy):
    loader = DataLoader(TensorDataset(*xy))
    with pytest.raises(ValueError, match="batch_size"):
        loader.batch_size = 3


def test_pin_memory_is_an_accepted_no_op(xy):
    plain = list(DataLoader(TensorDataset(*xy), batch_size=4))
    pinned = list(DataLoader(TensorDataset(*xy), batch_size=4, pin_memory=True))
    _assert_batches_equal(pinned, plain)


def test_tensor_dataset_gather_matches_per_sample_collation(xy):
    class PerSample(TensorDataset):  # an override disables the batched gather
        def __getitem__(self, i):
            return super().__getitem__(i)

    x, y = xy
    order = [7, 2, 2, 9, -1, 0]
    fast = list(DataLoader(Subset(TensorDataset(x, y), list(range(10))), batch_size=4, sampler=order))
    slow = list(DataLoader(PerSample(x, y), batch_size=4, sampler=order))
    _assert_batches_equal(fast, slow)
    assert fast[0][1].tolist() == [7, 2, 2, 9]
    with pytest.raises(IndexError):
        list(DataLoader(TensorDataset(x, y), batch_size=2, sampler=[0, 10]))


# -- samplers ----------------------------------------------------------------------------------
def test_sequential_and_random_samplers():
    data = list(range(6))
    assert list(SequentialSampler(data)) == data and len(SequentialSampler(data)) == 6
    g = ember.Generator().manual_seed(0)
    perm = list(RandomSampler(data, generator=g))
    assert sorted(perm) == data
    assert list(RandomSampler(data, generator=ember.Generator().manual_seed(0))) == perm
    longer = list(RandomSampler(data, num_samples=14, generator=g))
    assert len(longer) == 14 and sorted(longer[:6]) == data and sorted(longer[6:12]) == data
    drawn = list(RandomSampler(data, replacement=True, num_samples=3000, generator=g))
    assert len(drawn) == 3000 and set(drawn) == set(data)
    counts = collections.Counter(drawn)
    assert all(400 < counts[i] < 600 for i in data)
    with pytest.raises(ValueError, match="num_samples"):
        RandomSampler(data, num_samples=0)
    with pytest.raises(ValueError, match="num_samples"):
        RandomSampler([])
    with pytest.raises(TypeError, match="replacement"):
        RandomSampler(data, replacement=1)


def test_subset_random_sampler():
    indices = [10, 20, 30, 40]
    a = list(SubsetRandomSampler(indices, generator=ember.Generator().manual_seed(3)))
    b = list(SubsetRandomSampler(indices, generator=ember.Generator().manual_seed(3)))
    assert a == b and sorted(a) == indices and len(SubsetRandomSampler(indices)) == 4


def test_weighted_sampler_distribution_with_replacement():
    weights = [1.0, 0.0, 3.0, 6.0, 0.0]
    g = ember.Generator().manual_seed(1)
    draws = list(WeightedRandomSampler(weights, 20000, generator=g))
    assert len(draws) == 20000
    counts = collections.Counter(draws)
    assert counts[1] == 0 and counts[4] == 0
    for i, p in [(0, 0.1), (2, 0.3), (3, 0.6)]:
        assert abs(counts[i] / 20000 - p) < 0.015
    again = list(WeightedRandomSampler(weights, 20000, generator=ember.Generator().manual_seed(1)))
    assert again == draws


def test_weighted_sampler_without_replacement():
    weights = [5.0, 0.0, 1.0, 1.0, 3.0]
    g = ember.Generator().manual_seed(2)
    firsts = collections.Counter()
    for _ in range(300):
        draw = list(WeightedRandomSampler(weights, 4, replacement=False, generator=g))
        assert sorted(draw) == [0, 2, 3, 4]  # each positive-weight index exactly once
        firsts[draw[0]] += 1
    assert firsts[0] > firsts[4] > firsts[2]  # first draw is proportional to weight (0.5, 0.3, 0.1)
    with pytest.raises(RuntimeError, match="without replacement"):
        list(WeightedRandomSampler(weights, 5, replacement=False))


def test_weighted_sampler_validation():
    with pytest.raises(ValueError, match="num_samples"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="1d"):
        WeightedRandomSampler([[1.0, 2.0]], 2)
    with pytest.raises(RuntimeError, match="non-negative"):
        list(WeightedRandomSampler([1.0, -1.0], 2))
    with pytest.raises(RuntimeError, match="zero"):
        list(WeightedRandomSampler([0.0, 0.0], 2))


def test_batch_sampler():
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(range(3), True, False)
    with pytest.raises(ValueError, match="drop_last"):
        BatchSampler(range(3), 2, 0)


# -- collation ---------------------------------------------------------------------------------
Point = collections.namedtuple("Point", ["x", "label"])


def test_default_collate_nested_structures():
    batch = [{"img": ember.ones(2, 3) * i, "meta": (i, float(i), f"n{i}"), "p": Point(np.float32(i), True)}
             for i in range(4)]
    out = default_collate(batch)
    assert set(out) == {"img", "meta", "p"}
    assert out["img"].shape == (4, 2, 3) and out["img"][3].tolist() == [[3.0] * 3] * 2
    ints, floats, names = out["meta"]  # tuples come back as lists
    assert isinstance(out["meta"], list)
    assert ints.dtype == ember.int64 and ints.tolist() == [0, 1, 2, 3]
    assert floats.dtype == ember.float64
    assert names == ("n0", "n1", "n2", "n3")  # strings pass through (a tuple here, from the transpose)
    assert isinstance(out["p"], Point)
    assert out["p"].x.dtype == ember.float32 and out["p"].label.dtype == ember.bool


def test_default_collate_numpy_and_errors():
    arrays = default_collate([np.arange(3, dtype=np.int16), np.arange(3, dtype=np.int16)])
    assert arrays.dtype == ember.int16 and arrays.shape == (2, 3)
    scalars = default_collate([np.float64(0.5), np.float64(1.5)])
    assert scalars.dtype == ember.float64 and scalars.tolist() == [0.5, 1.5]
    assert default_collate([[1, 2], [3, 4]])[0].tolist() == [1, 3]
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="default_collate"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_default_convert():
    out = default_convert({"a": np.arange(2), "b": (np.float32(1.0), "x"), "c": Point(np.int64(3), 1)})
    assert out["a"].dtype == ember.int64 and out["a"].tolist() == [0, 1]
    assert isinstance(out["b"], list) and out["b"][0].dtype == ember.float32 and out["b"][1] == "x"
    assert isinstance(out["c"], Point) and out["c"].x.dtype == ember.int64 and out["c"].label == 1
    t = ember.ones(2)
    assert default_convert(t) is t and default_convert(5) == 5


# -- datasets ----------------------------------------------------------------------------------
def test_random_split_lengths_and_fractions():
    data = list(range(10))
    parts = random_split(data, [3, 7], generator=ember.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(list(parts[0]) + list(parts[1])) == data
    again = random_split(data, [3, 7], generator=ember.Generator().manual_seed(0))
    assert list(again[0]) == list(parts[0])
    parts = random_split(list(range(11)), [0.5, 0.3, 0.2], generator=ember.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [6, 3, 2]  # floor gives 5, 3, 2; the remainder goes to the first
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(data, [3, 3])
    with pytest.raises(ValueError, match="Fraction"):
        random_split(data, [1.5, -0.5])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        random_split(list(range(2)), [0.9, 0.1])
    assert any("index 1 is 0" in str(w.message) for w in caught)


def test_subset_concat_chain():
    a, b = list(range(3)), list(range(10, 15))
    both = ConcatDataset([a, b])
    assert len(both) == 8 and both[2] == 2 and both[3] == 10 and both[-1] == 14
    with pytest.raises(ValueError):
        both[-9]
    sub = Subset(both, [7, 0])
    assert len(sub) == 2 and sub[0] == 14 and sub.__getitems__([1, 0]) == [0, 14]
    chained = Stream(0, 2) + Stream(5, 7)
    assert isinstance(chained, ChainDataset) and list(chained) == [0, 1, 5, 6] and len(chained) == 4
    with pytest.raises(AssertionError):
        ConcatDataset([Stream(0, 2)])
    with pytest.raises(AssertionError):
        TensorDataset(ember.ones(2), ember.ones(3))


# -- workers -----------------------------------------------------------------------------------
def test_two_workers_match_single_process():
    ds = Squares(23)
    kwargs = dict(batch_size=4, shuffle=True)
    single = list(DataLoader(ds, generator=ember.Generator().manual_seed(5), **kwargs))
    multi = list(DataLoader(ds, num_workers=2, generator=ember.Generator().manual_seed(5), **kwargs))
    _assert_batches_equal(multi, single)
    assert sorted(i for b in multi for i in b["i"].tolist()) == list(range(23))
    assert _no_children_left()  # workers exit when the epoch ends


def test_out_of_order_delivery_yields_every_batch():
    batches = list(DataLoader(Squares(20), batch_size=3, num_workers=2, in_order=False))
    assert sorted(i for b in batches for i in b["i"].tolist()) == list(range(20))


def test_tensor_batches_from_workers(xy):
    ds = TensorDataset(*xy)
    _assert_batches_equal(list(DataLoader(ds, batch_size=3, num_workers=2, prefetch_factor=1)),
                          list(DataLoader(ds, batch_size=3)))


def test_worker_info_seeds_and_init_fn():
    assert get_worker_info() is None
    loader = DataLoader(WhoAmI(), batch_size=None, num_workers=2, worker_init_fn=tag_worker,
                        generator=ember.Generator().manual_seed(11))
    samples = list(loader)
    assert {s["worker"] for s in samples} == {0, 1} and all(s["num_workers"] == 2 for s in samples)
    assert all(s["mine"] and s["tag"] == f"init-{s['worker']}" for s in samples)
    seeds = {s["worker"]: s["seed"] for s in samples}
    assert seeds[1] == seeds[0] + 1
    assert len({s["pid"] for s in samples} - {os.getpid()}) == 2
    first_draws = {s["worker"]: s["draw"] for s in samples[:2]}
    assert first_draws[0] != first_draws[1]  # each worker has its own random stream
    again = list(DataLoader(WhoAmI(), batch_size=None, num_workers=2, generator=ember.Generator().manual_seed(11)))
    assert [s["draw"] for s in again] == [s["draw"] for s in samples]


def test_persistent_workers_survive_epochs():
    loader = DataLoader(WhoAmI(), batch_size=2, num_workers=2, persistent_workers=True)
    first = list(loader)
    pids = {p for b in first for p in b["pid"].tolist()}
    partial = iter(loader)
    next(partial)  # abandon the second epoch part-way ...
    third = list(loader)  # ... and the third still sees a full epoch from the same processes
    assert len(first) == len(third) == 4
    assert {p for b in third for p in b["pid"].tolist()} == pids
    assert [b["worker"].tolist() for b in third] == [b["worker"].tolist() for b in first]
    assert len(multiprocessing.active_children()) >= 2
    del loader, partial
    gc.collect()
    assert _no_children_left()


def test_iterable_dataset_sharded_across_workers():
    batches = list(DataLoader(Stream(0, 17), batch_size=4, num_workers=2))
    values = [v for b in batches for v in b.tolist()]
    assert sorted(values) == list(range(17))  # every sample once, none duplicated
    assert batches[0].tolist() == [0, 1, 2, 3] and batches[1].tolist() == [9, 10, 11, 12]
    assert list(DataLoader(Stream(0, 5), num_workers=2, batch_size=None)) == [0, 3, 1, 4, 2]


def test_persistent_workers_restart_an_iterable_dataset_each_epoch():
    loader = DataLoader(Stream(0, 9), batch_size=2, num_workers=2, persistent_workers=True)
    epochs = [sorted(v for b in loader for v in b.tolist()) for _ in range(2)]
    assert epochs == [list(range(9))] * 2


def test_worker_exception_names_worker_and_original_error():
    loader = DataLoader(Squares(12, fail_at=5), batch_size=2, num_workers=2)
    start = time.monotonic()
    with pytest.raises(ValueError) as info:
        list(loader)
    message = str(info.value)
    assert "worker process 0" in message  # batch [4, 5] is task 2, which went to worker 0
    assert "bad sample 5: deliberately broken" in message and "Traceback" in message
    del info  # its traceback holds the iterator; once it is gone the workers shut down
    gc.collect()
    assert _no_children_left()
    assert time.monotonic() - start < 5


def test_worker_errors_that_do_not_pickle_still_arrive():
    class Odd(Exception):  # local, so its type cannot be sent back; and it takes two arguments
        def __init__(self, a, b):
            super().__init__(a, b)

    class Bad(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            raise Odd("odd failure", i)

    with pytest.raises(RuntimeError, match="(?s)Caught Odd in DataLoader worker process 0.*odd failure"):
        list(DataLoader(Bad(), num_workers=1))
    with pytest.raises(Exception, match="while sending a batch from DataLoader worker process 0"):
        list(DataLoader(Squares(2), num_workers=1, collate_fn=lambda batch: (lambda: batch)))


def test_worker_init_fn_error_is_reported():
    loader = DataLoader(Squares(4), batch_size=2, num_workers=1, worker_init_fn=failing_init)
    with pytest.raises(KeyError, match="no config for worker 0"):
        next(iter(loader))


def test_killed_worker_is_detected():
    loader = DataLoader(Squares(12, kill_at=6), batch_size=2, num_workers=2, persistent_workers=True)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="worker 1 .*exited unexpectedly.*SIGKILL"):
        list(loader)
    assert time.monotonic() - start < 5
    with pytest.raises(RuntimeError, match="shut down"):
        list(loader)  # the persistent workers are gone; say so instead of hanging
    assert _no_children_left()


def test_timeout():
    loader = DataLoader(Squares(4, sleep_at=2, sleep_s=0.8), batch_size=2, num_workers=1, timeout=0.2)
    it = iter(loader)
    next(it)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="timed out after 0.2 seconds"):
        next(it)
    assert time.monotonic() - start < 0.7  # raised well before the slow sample finished


def test_spawn_start_method():
    loader = DataLoader(TensorDataset(ember.arange(6).float(), ember.arange(6)), batch_size=4, num_workers=1,
                        multiprocessing_context="spawn")
    assert [b[1].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5]]
