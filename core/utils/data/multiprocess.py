"""The main-process side of multi-process loading: start workers, hand out tasks, collect results.

Each worker has a task pipe and a result pipe (see ``worker.py`` for the protocol). Tasks
go out round-robin to the workers still producing, at most ``prefetch_factor`` outstanding
per worker. A worker answers its tasks in order, so with ``in_order`` the next batch is
always the next message on one known pipe; without it, whichever worker answers first wins.
Waiting uses ``multiprocessing.connection.wait`` on the result pipe *and* the process
sentinel, so a worker that is killed is noticed the moment it dies, without polling.
"""
from __future__ import annotations

import multiprocessing
import signal
from collections import deque
from multiprocessing.connection import wait
from typing import TYPE_CHECKING

from .base_iter import BaseIter
from .worker import EndOfData, ExceptionWrapper, ResumeIteration, WorkerSpec, worker_loop

if TYPE_CHECKING:
    from .dataloader import DataLoader

_JOIN_TIMEOUT = 5.0  # seconds a worker gets to exit cleanly before it is terminated


def _default_context():
    """fork where the platform has it (workers start in milliseconds and share the dataset
    copy-on-write); otherwise the platform default, which everything here also supports."""
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


class _Worker:
    """The main process's handle on one worker."""

    def __init__(self, worker_id: int, process, tasks, results) -> None:
        self.id = worker_id
        self.process = process
        self.tasks = tasks            # send end of the task pipe
        self.results = results        # receive end of the result pipe
        self.pending: deque = deque()  # task indices sent and not yet answered, oldest first
        self.active = True            # False once its iterable dataset is exhausted this epoch


class MultiProcessIter(BaseIter):
    """``num_workers > 0``: workers fetch and collate; this process only reorders and hands out."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._prefetch = max(1, loader.prefetch_factor)
        self._timeout = loader.timeout
        self._in_order = loader.in_order
        self._persistent = loader.persistent_workers
        self._shutdown = False
        self._workers: list[_Worker] = []
        context = loader.multiprocessing_context or _default_context()
        self._done = context.Event()
        try:
            for worker_id in range(self._num_workers):
                self._workers.append(self._start_worker(context, loader, worker_id))
        except BaseException:
            self._shutdown_workers()
            raise
        self._start_epoch()

    def _start_worker(self, context, loader: DataLoader, worker_id: int) -> _Worker:
        task_recv, task_send = context.Pipe(duplex=False)
        result_recv, result_send = context.Pipe(duplex=False)
        spec = WorkerSpec(worker_id=worker_id, num_workers=self._num_workers, dataset=self._dataset,
                          is_iterable=self._is_iterable, auto_collation=self._auto_collation,
                          collate_fn=self._collate_fn, drop_last=self._drop_last, seed=self._base_seed + worker_id,
                          init_fn=loader.worker_init_fn)
        process = context.Process(target=worker_loop, args=(spec, task_recv, result_send, self._done),
                                  name=f"DataLoaderWorker-{worker_id}", daemon=True)
        try:
            process.start()
        finally:
            # Only the worker keeps these ends, so its death reads as end-of-file here, and
            # workers started later do not inherit them.
            task_recv.close()
            result_send.close()
        return _Worker(worker_id, process, task_send, result_recv)

    # -- epochs ------------------------------------------------------------------------------
    def _start_epoch(self) -> None:
        self._send_idx = 0        # next task index to hand out
        self._rcvd_idx = 0        # next task index to return (in-order mode)
        self._owner: dict = {}    # task index -> worker
        self._outstanding = 0
        self._sampler_done = False
        self._next_worker = 0
        for w in self._workers:
            w.active = True
        for _ in range(self._prefetch * self._num_workers):
            if not self._try_put_index():
                break

    def _reset(self, loader: DataLoader) -> None:
        """Persistent workers: start a new epoch on the same processes."""
        super()._reset(loader)
        if self._shutdown:
            raise RuntimeError("DataLoader: persistent workers were shut down after an error; "
                               "create a new DataLoader")
        for w in self._workers:
            self._send(w, ResumeIteration())
        for w in self._workers:  # drain replies to tasks of an unfinished epoch, up to the ack
            while True:
                task_idx, _ = self._receive(w)
                if isinstance(task_idx, ResumeIteration):
                    break
            w.pending.clear()
        self._start_epoch()

    # -- tasks -------------------------------------------------------------------------------
    def _try_put_index(self) -> bool:
        """Send the sampler's next index to the next active worker with room; False if none was sent."""
        if self._sampler_done:
            return False
        n = self._num_workers
        for step in range(n):
            w = self._workers[(self._next_worker + step) % n]
            if w.active and len(w.pending) < self._prefetch:
                break
        else:
            return False
        try:
            index = self._next_index()
        except StopIteration:
            self._sampler_done = True
            return False
        self._next_worker = (w.id + 1) % n
        self._send(w, (self._send_idx, index))
        w.pending.append(self._send_idx)
        self._owner[self._send_idx] = w
        self._send_idx += 1
        self._outstanding += 1
        return True

    def _send(self, w: _Worker, message) -> None:
        try:
            w.tasks.send(message)
        except OSError:
            self._worker_died(w)

    # -- results -----------------------------------------------------------------------------
    def _next_data(self):
        while True:
            if self._outstanding == 0:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            if self._shutdown:
                raise RuntimeError("DataLoader: this iterator's workers were shut down after an error")
            if self._in_order:
                candidates = [self._owner[self._rcvd_idx]]
            else:
                candidates = [w for w in self._workers if w.pending]
            w, task_idx, data = self._receive_any(candidates)
            w.pending.popleft()
            del self._owner[task_idx]
            self._outstanding -= 1
            self._rcvd_idx = task_idx + 1
            if isinstance(data, EndOfData):
                w.active = False
            self._try_put_index()
            if isinstance(data, EndOfData):
                continue
            if isinstance(data, ExceptionWrapper):
                data.reraise()
            return data

    def _receive(self, w: _Worker):
        return self._receive_any([w])[1:]

    def _receive_any(self, candidates: list):
        """The next message from any of ``candidates``, as ``(worker, task_idx, payload)``.

        Raises on timeout, and shuts everything down and raises if a worker died.
        """
        by_handle = {}
        for w in candidates:
            by_handle[w.results] = w
            by_handle[w.process.sentinel] = w
        ready = wait(list(by_handle), self._timeout if self._timeout > 0 else None)
        if not ready:
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        # A worker may have written its result and then died: read pipes before sentinels.
        pipes = [h for h in ready if h is by_handle[h].results]
        if not pipes:
            self._worker_died(by_handle[ready[0]])
        w = by_handle[pipes[0]]
        try:
            task_idx, data = w.results.recv()
        except (EOFError, OSError):
            self._worker_died(w)
        except Exception as exc:
            self._shutdown_workers()
            raise RuntimeError(f"DataLoader: could not unpickle a result from worker {w.id}: {exc}") from exc
        return w, task_idx, data

    def _worker_died(self, w: _Worker):
        w.process.join(timeout=1.0)
        code = w.process.exitcode
        if code is None:
            how = "closed its result pipe"
        elif code < 0:
            try:
                how = f"was killed by signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        self._shutdown_workers()
        raise RuntimeError(f"DataLoader worker {w.id} (pid {w.process.pid}) exited unexpectedly: it {how}")

    # -- shutdown ----------------------------------------------------------------------------
    def _shutdown_workers(self) -> None:
        """Stop every worker: ask nicely, stop reading, wait a little, then terminate."""
        if self._shutdown:
            return
        self._shutdown = True
        self._done.set()
        for w in self._workers:
            try:
                w.tasks.send(None)
            except (OSError, ValueError):
                pass
        for w in self._workers:
            # Closing our end unblocks a worker stuck writing a batch nobody will read.
            w.results.close()
        for w in self._workers:
            w.process.join(timeout=_JOIN_TIMEOUT)
            if w.process.is_alive():
                w.process.terminate()
                w.process.join()
            w.tasks.close()

    def __del__(self) -> None:
        try:
            self._shutdown_workers()
        except Exception:
            pass  # interpreter shutdown: modules may already be gone
