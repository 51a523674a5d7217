"""The reducer: averages gradients across ranks in buckets while backward is still running.

Each parameter's post-accumulate-grad hook copies its fresh gradient into its bucket; when a bucket is
full it is divided by the world size and all-reduced asynchronously, buckets strictly in order (every
rank must issue collectives in the same order). A callback queued with the autograd engine waits for
the all-reduces at the end of backward and writes the averages back into ``.grad``.

One iteration: ``prepare_for_forward`` (fails if the previous reduction never finished),
``prepare_for_backward`` (after forward; finds unused parameters), hooks during backward, ``finalize``.
"""
from __future__ import annotations

import time
import weakref

from ...autograd.engine import queue_callback
from ...autograd.grad_mode import no_grad
from ...creation import tensor
from ...dispatch.schema.dtypes import int32
from .buckets import Bucket, assign_buckets
from .unused import unused_parameters

_UNFINISHED = (
    "Expected to have finished reduction in the prior iteration before starting a new one. The module has "
    "parameters that received no gradient in the last backward pass, so their buckets were never all-reduced. "
    "Pass find_unused_parameters=True to ember.nn.parallel.DistributedDataParallel if parts of the model are "
    "legitimately skipped, and make sure every output of forward takes part in computing the loss. "
    "Parameters that did not receive a gradient on rank {rank}: {names}")


class Reducer:
    """Bucketed, overlapped gradient averaging for the parameters of one DDP module."""

    def __init__(self, dist, group, params: list, names: list[str], bucket_bytes: int, first_bucket_bytes: int,
                 find_unused: bool, gradient_as_bucket_view: bool, static_graph: bool) -> None:
        self.dist, self.group = dist, group
        self.params, self.names = params, names
        self.world_size = dist.get_world_size(group)
        self.find_unused = find_unused
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        layout = assign_buckets(params, bucket_bytes, first_bucket_bytes)
        self.buckets = [Bucket(params, indices) for indices in layout]
        self.bucket_of = {i: b for b in self.buckets for i in b.indices}
        self.locally_used = [False] * len(params)  # since the last synchronized backward (no_sync included)
        self.static_unused: list[int] | None = None  # with static_graph: found in the first iteration
        self.expect_hooks = False
        self.require_finalize = False
        self.last_wait_s = 0.0
        self._reset_iteration()
        this = weakref.ref(self)  # hooks must not keep a discarded DDP alive
        self.handles = [p.register_post_accumulate_grad_hook(_hook(this, i)) for i, p in enumerate(params)]

    def _reset_iteration(self) -> None:
        self.ready = [False] * len(self.params)
        self.unused: list[int] = []
        self.unused_marked = False
        self.next_bucket = 0
        self.works: list = []
        self.completed = 0  # works[:completed] are known to have finished
        self.used_work = None
        self.used_map = None
        for bucket in self.buckets:
            bucket.pending = len(bucket.indices)

    # -- the iteration ---------------------------------------------------------------------------------
    def prepare_for_forward(self) -> None:
        if self.require_finalize:
            missing = [self.names[i] for i, ready in enumerate(self.ready) if not ready]
            raise RuntimeError(_UNFINISHED.format(rank=self.dist.get_rank(self.group), names=", ".join(missing)))

    def prepare_for_backward(self, outputs) -> None:
        """Arm the hooks for the coming backward; note which parameters the forward left unused."""
        self._reset_iteration()
        self.expect_hooks = True
        if self.static_graph:
            if self.static_unused is None:
                self.static_unused = unused_parameters(self.params, outputs)
            self.unused = self.static_unused
        elif self.find_unused:
            self.unused = unused_parameters(self.params, outputs)

    def on_gradient(self, index: int) -> None:
        """A parameter's gradient was accumulated into ``.grad``."""
        self.locally_used[index] = True
        if not self.expect_hooks:
            return  # no_sync(), or a backward that no DDP forward prepared: gradients just accumulate
        if not self.unused_marked:
            self.unused_marked = True
            for unused in self.unused:
                self._mark_ready(unused)
        self._mark_ready(index)
        self._progress()

    def _progress(self) -> None:
        """Test the all-reduces in flight: MPI advances a nonblocking collective only inside MPI calls, so
        without this a bucket launched early in backward would not move until ``finalize`` waits for it."""
        works = self.works
        while self.completed < len(works) and works[self.completed].is_completed():
            self.completed += 1

    def _mark_ready(self, index: int) -> None:
        if self.ready[index]:
            raise RuntimeError(
                f"DistributedDataParallel: parameter {self.names[index]} was marked ready twice in one iteration: "
                f"its gradient was accumulated by more than one backward pass after a single forward. Call "
                f"forward again before each backward (or use no_sync() for the extra passes).")
        self.ready[index] = True
        self.require_finalize = True
        bucket = self.bucket_of[index]
        bucket.fill(index, self.params[index].grad)
        bucket.pending -= 1
        if bucket.pending == 0:
            self._launch_ready_buckets()

    def _launch_ready_buckets(self) -> None:
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            bucket = self.buckets[self.next_bucket]
            with no_grad():
                bucket.buffer.div_(self.world_size)
            self.works.append(self.dist.all_reduce(bucket.buffer, group=self.group, async_op=True))
            self.next_bucket += 1
        if self.next_bucket == len(self.buckets):
            self._launch_used_map()  # every gradient of this iteration has arrived by now
            queue_callback(self.finalize)

    def _launch_used_map(self) -> None:
        """With unused-parameter detection: which parameters any rank used, summed across ranks."""
        if not (self.find_unused or self.static_graph):
            return
        self.used_map = tensor([int(used) for used in self.locally_used], dtype=int32,
                               device=self.params[0].device)
        self.used_work = self.dist.all_reduce(self.used_map, group=self.group, async_op=True)

    def finalize(self) -> None:
        """End of backward: wait for every all-reduce and write the averages back into ``.grad``."""
        start = time.perf_counter()
        for work in self.works:
            work.wait()
        self.last_wait_s = time.perf_counter() - start  # communication that backward did not hide
        globally_used = None
        if self.used_work is not None:
            self.used_work.wait()
            globally_used = self.used_map.tolist()
        with no_grad():
            for bucket in self.buckets:
                for index, view in zip(bucket.indices, bucket.views):
                    if globally_used is not None and not globally_used[index]:
                        continue  # no rank used it: its .grad stays as it was, as in PyTorch
                    self._write_back(self.params[index], view)
        self.expect_hooks = False
        self.require_finalize = False
        self.locally_used = [False] * len(self.params)

    def _write_back(self, param, view) -> None:
        if self.gradient_as_bucket_view:
            param.grad = view
        elif param.grad is None:
            param.grad = view.clone()
        else:
            param.grad.copy_(view)

    def __del__(self) -> None:  # a discarded DDP leaves no hooks behind on the module's parameters
        for handle in self.handles:
            handle.remove()


def _hook(reducer_ref, index: int):
    def hook(param) -> None:
        reducer = reducer_ref()
        if reducer is not None:
            reducer.on_gradient(index)
    return hook
