"""The MPI engine: collectives on host NumPy arrays through mpi4py's nonblocking calls.

Every operation is issued as a nonblocking MPI call and returned as a ``Pending`` that ``Work`` polls against
the group's deadline, so a dead peer surfaces as a timeout instead of a hang. MPI is initialised with
``MPI_THREAD_MULTIPLE`` (mpi4py's default), so calls may come from any thread, autograd's included.

Reductions: float16 and bfloat16 are reduced in float32 and rounded once at the end; bool travels as uint8
with SUM meaning OR and PRODUCT meaning AND (as PyTorch's NCCL backend does); AVG is a SUM divided by the
group size (truncating for integers, as NCCL does). Data that is only moved travels as raw bytes.
"""
from __future__ import annotations

import os
import sys
import time
import traceback

import numpy as np
from mpi4py import MPI

from .. import host_buffers
from ..reduce_op import RedOpType
from ..work import Pending, completed

_MPI_OP = {RedOpType.SUM: MPI.SUM, RedOpType.AVG: MPI.SUM, RedOpType.PRODUCT: MPI.PROD, RedOpType.MIN: MPI.MIN,
           RedOpType.MAX: MPI.MAX, RedOpType.BAND: MPI.BAND, RedOpType.BOR: MPI.BOR, RedOpType.BXOR: MPI.BXOR}
_BOOL_OP = {RedOpType.SUM: RedOpType.MAX, RedOpType.PRODUCT: RedOpType.MIN}  # OR and AND on 0/1 bytes
_WIDEN = {np.dtype(np.float16).name: np.float32, "bfloat16": np.float32}
DEVICES = ("cpu", "opencl")
# mpiexec forwards each rank's output through its own proxy, which Abort tears down: give it time to drain.
_OUTPUT_DRAIN_SECONDS = 0.5


def world() -> MPI.Comm:
    return MPI.COMM_WORLD


def thread_level() -> str:
    return {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled", MPI.THREAD_SERIALIZED: "serialized",
            MPI.THREAD_MULTIPLE: "multiple"}[MPI.Query_thread()]


def processor_name() -> str:
    return MPI.Get_processor_name()


class MPIEngine:
    """Collectives of one MPI communicator on contiguous NumPy arrays (results written into them)."""

    name = "mpi"
    devices = DEVICES
    stage = staticmethod(host_buffers.host_array)  # tensor -> the array this engine communicates
    write_back = staticmethod(host_buffers.write_back)  # (tensor, array) -> step making the values the tensor's
    assign = staticmethod(host_buffers.assign)
    empty = staticmethod(host_buffers.empty)
    stack = staticmethod(host_buffers.stack)

    def __init__(self, comm: MPI.Comm):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()

    # -- groups ------------------------------------------------------------------------------
    def split(self, ranks: list[int]) -> "MPIEngine | None":
        """A sub-communicator of ``ranks`` (ranks of this communicator); every rank must call this."""
        member = self.rank in ranks
        comm = self.comm.Split(0 if member else MPI.UNDEFINED, ranks.index(self.rank) if member else 0)
        return MPIEngine(comm) if member else None

    def close(self) -> None:
        if self.comm != MPI.COMM_WORLD and self.comm != MPI.COMM_NULL:
            self.comm.Free()

    # -- data movement -------------------------------------------------------------------------
    def barrier(self) -> Pending:
        return _requests([self.comm.Ibarrier()])

    def broadcast(self, array: np.ndarray, root: int) -> Pending:
        return _requests([self.comm.Ibcast(_bytes(array), root=root)], keep=(array,))

    def all_gather(self, send: np.ndarray, recv: np.ndarray) -> Pending:
        return _requests([self.comm.Iallgather(_bytes(send), _bytes(recv))], keep=(send, recv))

    def gather(self, send: np.ndarray, recv: np.ndarray | None, root: int) -> Pending:
        return _requests([self.comm.Igather(_bytes(send), _bytes(recv) if recv is not None else None, root=root)],
                         keep=(send, recv))

    def scatter(self, send: np.ndarray | None, recv: np.ndarray, root: int) -> Pending:
        return _requests([self.comm.Iscatter(_bytes(send) if send is not None else None, _bytes(recv), root=root)],
                         keep=(send, recv))

    def send(self, array: np.ndarray, dst: int, tag: int) -> Pending:
        return _requests([self.comm.Isend(_bytes(array), dest=dst, tag=tag)], keep=(array,))

    def recv(self, array: np.ndarray, src: int | None, tag: int) -> Pending:
        """Receive into ``array``; finishing returns the sender's rank (useful when ``src`` is None)."""
        status = MPI.Status()
        request = self.comm.Irecv(_bytes(array), source=MPI.ANY_SOURCE if src is None else src, tag=tag)
        return Pending(lambda: request.Test(status), lambda: status.Get_source(), keep=(array,))

    # -- reductions ----------------------------------------------------------------------------
    def all_reduce(self, array: np.ndarray, op: RedOpType) -> Pending:
        work, mpi_op, finish = self._reduction(array, op)
        return _requests([self.comm.Iallreduce(MPI.IN_PLACE, work, op=mpi_op)], finish, keep=(work,))

    def reduce(self, array: np.ndarray, root: int, op: RedOpType) -> Pending:
        work, mpi_op, finish = self._reduction(array, op)
        if self.rank == root:
            return _requests([self.comm.Ireduce(MPI.IN_PLACE, work, op=mpi_op, root=root)], finish, keep=(work,))
        return _requests([self.comm.Ireduce(work, None, op=mpi_op, root=root)], keep=(work,))

    def reduce_scatter(self, send: np.ndarray, recv: np.ndarray, op: RedOpType) -> Pending:
        send_work, mpi_op, _ = self._reduction(send, op)
        recv_work, _, finish = self._reduction(recv, op)
        return _requests([self.comm.Ireduce_scatter_block(send_work, recv_work, op=mpi_op)], finish,
                         keep=(send_work, recv_work))

    def _reduction(self, array: np.ndarray, op: RedOpType):
        """The array MPI reduces (``array`` itself, or a wider or byte view of it), the MPI op, and the step
        that turns the reduced array into ``array``'s result."""
        if array.dtype == np.bool_:
            work = array.reshape(-1).view(np.uint8)
            return work, _MPI_OP[_BOOL_OP.get(op, op)], None
        size, flat = self.size, array.reshape(-1)
        widen = _WIDEN.get(array.dtype.name)
        work = flat if widen is None else flat.astype(widen)

        def finish() -> None:
            result = work
            if op is RedOpType.AVG:
                result = result / size if result.dtype.kind in "fc" else _truncating_div(result, size)
            if result is not flat:
                flat[...] = result.astype(flat.dtype, copy=False)
        return work, _MPI_OP[op], finish


def _requests(requests: list, finish=None, keep: tuple = ()) -> Pending:
    """Nonblocking MPI requests as a Pending that holds the arrays they read and write (``keep``): mpi4py's
    nonblocking collectives keep no reference to their buffers, so an array the caller drops would be freed,
    and reused, while MPI still reads it."""
    if not requests:
        return completed(finish)
    return Pending(lambda: MPI.Request.Testall(requests), finish, keep=keep)


def _bytes(array: np.ndarray) -> np.ndarray:
    """The array's bytes (MPI needs no dtype to move data, and knows none for bfloat16)."""
    return array.reshape(-1).view(np.uint8)


def _truncating_div(values: np.ndarray, n: int) -> np.ndarray:
    quotient = np.abs(values) // n
    return np.where(values < 0, -quotient, quotient).astype(values.dtype)


def install_abort_on_uncaught_exception() -> None:
    """An uncaught exception in one rank aborts the whole MPI job (as ``python -m mpi4py`` does), instead
    of leaving the other ranks waiting for it until their timeout."""
    previous = sys.excepthook
    if getattr(previous, "_ember_aborts", False):
        return

    def abort(kind, value, tb) -> None:
        rank = MPI.COMM_WORLD.Get_rank()
        report = f"[rank {rank}] uncaught exception; aborting the MPI job:\n" + \
            "".join(traceback.format_exception(kind, value, tb))
        sys.stdout.flush()
        sys.stderr.flush()
        os.write(sys.stderr.fileno(), report.encode(errors="replace"))  # one write: all of it, or none
        time.sleep(_OUTPUT_DRAIN_SECONDS)
        MPI.COMM_WORLD.Abort(1)
    abort._ember_aborts = True
    sys.excepthook = abort
