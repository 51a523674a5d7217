"""The worker side of multi-process loading: the loop each worker process runs.

Protocol, one pair of pipes per worker:

* tasks (main -> worker): ``(task_idx, index)`` to fetch; ``ResumeIteration()`` to start a
  new epoch (persistent workers); ``None`` to exit.
* results (worker -> main): exactly one ``(task_idx, payload)`` per task, in the order the
  tasks arrived, where ``payload`` is the collated batch, an ``ExceptionWrapper``, or
  ``EndOfData`` once an iterable dataset is exhausted; ``(ResumeIteration, None)`` acknowledges
  a resume after every earlier reply.

One result pipe per worker (rather than one shared queue) means the main process can read
the batch it needs next straight from its worker, and a worker that dies shows up at once
as end-of-file on its pipe and as its process sentinel, instead of leaving a shared queue
half-written. Results are pickled and sent by a daemon thread so the worker can fetch the
next batch while the previous one is being written.
"""
from __future__ import annotations

import multiprocessing
import pickle
import queue
import random
import sys
import threading
import traceback
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler

from ...random import manual_seed
from .fetch import make_fetcher

__all__ = ["WorkerInfo", "get_worker_info"]

_POLL_INTERVAL = 1.0  # seconds between checks that the main process is still alive
_worker_info = None


class WorkerInfo:
    """What a worker knows about itself: ``id``, ``num_workers``, ``seed`` and its ``dataset`` copy.

    Read-only, so that dataset code cannot accidentally change what other code relies on.
    """

    __initialized = False

    def __init__(self, **fields) -> None:
        for name, value in fields.items():
            setattr(self, name, value)
        self.__keys = tuple(fields)
        self.__initialized = True

    def __setattr__(self, name, value) -> None:
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        super().__setattr__(name, value)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__keys)
        return f"{type(self).__name__}({fields})"


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker: its ``WorkerInfo``; in the main process: None.

    An ``IterableDataset.__iter__`` uses it to yield only its share of the stream, and a
    ``worker_init_fn`` to configure the worker's dataset copy.
    """
    return _worker_info


class _KeyErrorMessage(str):
    """KeyError shows ``repr`` of its argument; this keeps a multi-line traceback readable."""

    def __repr__(self) -> str:
        return str(self)


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process as its type and traceback text.

    Exception objects themselves often do not pickle (they hold frames, sockets, locals);
    the formatted traceback always does. ``reraise`` raises the same type where it can be
    rebuilt from a message, otherwise a RuntimeError, with the original traceback inside.
    """

    def __init__(self, where: str, exc_info=None) -> None:
        exc_type, exc, tb = exc_info or sys.exc_info()
        self.type_name = exc_type.__name__
        self.exc_type = exc_type if _pickles(exc_type) else None
        self.text = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def reraise(self):
        message = f"Caught {self.type_name} {self.where}.\nOriginal {self.text}"
        if self.exc_type is KeyError:
            raise KeyError(_KeyErrorMessage(message))
        try:
            exc = self.exc_type(message) if self.exc_type is not None else RuntimeError(message)
        except Exception:
            raise RuntimeError(message) from None
        raise exc


def _pickles(obj) -> bool:
    try:
        pickle.dumps(obj)
        return True
    except Exception:
        return False


class ResumeIteration:
    """Task message: a new epoch starts on a persistent worker (recreate the fetcher)."""


@dataclass
class EndOfData:
    """Result payload: this worker's iterable dataset is exhausted for the epoch."""

    worker_id: int


@dataclass
class WorkerSpec:
    """Everything a worker needs, pickled once when the worker starts (spawn) or inherited (fork)."""

    worker_id: int
    num_workers: int
    dataset: object
    is_iterable: bool
    auto_collation: bool
    collate_fn: object
    drop_last: bool
    seed: int
    init_fn: object


def _seed_everything(seed: int) -> None:
    """Distinct, reproducible random streams per worker for Ember, ``random`` and (if loaded) NumPy."""
    random.seed(seed)
    manual_seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed([seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF])


_STOP = object()


def _send_results(outbox: queue.Queue, conn, worker_id: int) -> None:
    """Sender thread: pickle and write each result; a batch that cannot be pickled becomes an error."""
    while True:
        item = outbox.get()
        if item is _STOP:
            return
        try:
            payload = ForkingPickler.dumps(item)
        except Exception:
            error = ExceptionWrapper(f"while sending a batch from DataLoader worker process {worker_id}")
            payload = ForkingPickler.dumps((item[0], error))
        del item
        try:
            conn.send_bytes(payload)
        except OSError:  # the main process closed its end: it no longer wants results
            return


def worker_loop(spec: WorkerSpec, tasks, results, done_event) -> None:
    """Entry point of a worker process (module level, so that spawn can import it)."""
    global _worker_info
    where = f"in DataLoader worker process {spec.worker_id}"
    try:
        _worker_info = WorkerInfo(id=spec.worker_id, num_workers=spec.num_workers, seed=spec.seed,
                                  dataset=spec.dataset)
        _seed_everything(spec.seed)
        init_error = None
        if spec.init_fn is not None:
            try:
                spec.init_fn(spec.worker_id)
            except Exception:
                init_error = ExceptionWrapper(where)

        outbox: queue.Queue = queue.Queue()
        sender = threading.Thread(target=_send_results, args=(outbox, results, spec.worker_id), daemon=True)
        sender.start()
        parent = multiprocessing.parent_process()
        fetcher = None
        while True:
            if not tasks.poll(_POLL_INTERVAL):
                if (parent is not None and not parent.is_alive()) or done_event.is_set():
                    return
                continue
            message = tasks.recv()
            if message is None:
                return
            if isinstance(message, ResumeIteration):
                fetcher = None
                outbox.put((message, None))
                continue
            if done_event.is_set():
                continue  # shutting down: nobody will read the result
            task_idx, index = message
            if init_error is not None:
                outbox.put((task_idx, init_error))
                continue
            try:
                if fetcher is None:
                    fetcher = make_fetcher(spec.dataset, spec.is_iterable, spec.auto_collation, spec.collate_fn,
                                           spec.drop_last)
                data = fetcher.fetch(index)
            except StopIteration:
                data = EndOfData(spec.worker_id)
            except Exception:
                data = ExceptionWrapper(where)
            outbox.put((task_idx, data))
            del data
    except (KeyboardInterrupt, EOFError, OSError):
        pass  # interrupted, or the main process went away: exit quietly
