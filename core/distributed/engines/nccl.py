"""The NCCL engine: collectives on cuda tensors through CuPy's NCCL bindings (``cupy.cuda.nccl``).

The group's MPI communicator bootstraps it (rank 0's NCCL unique id is broadcast over MPI), so ranks start
the same way for both engines. Operations run on one CUDA stream per engine that first waits for the
caller's current stream (so it sees the inputs); a CUDA event is recorded after each. Until that event
completes the operation's buffers are kept from CuPy's stream-ordered pool (PyTorch's ``record_stream``), and
``Work.wait()`` makes the caller's current stream wait for it without blocking the host, as PyTorch's NCCL
work does (``wait(timeout=...)`` and ``is_completed()`` still ask the host). NCCL has no int16 and no bool:
int16 travels as int32, bool as uint8 (SUM = OR, PRODUCT = AND). The engine's device is made current only
inside its own calls; the process's current device is the caller's business.

Unverified here: this machine has no GPU (see docs/distributed.md).
"""
from __future__ import annotations

import os
import time

import numpy as np

from ...dispatch.contract.inflight import InFlight
from ..errors import DistBackendError
from ..reduce_op import RedOpType
from ..work import Pending, poll

_BOOL_OP = {RedOpType.SUM: RedOpType.MAX, RedOpType.PRODUCT: RedOpType.MIN}
DEVICES = ("cuda",)


def nccl_unavailable_reason() -> str | None:
    """None when CuPy's NCCL bindings and a CUDA device are present, else why not."""
    try:
        import cupy
        from cupy.cuda import nccl
    except Exception as error:  # CuPy missing, or built without NCCL
        return (f"CuPy with NCCL is not installed ({type(error).__name__}: {error}); pip install 'ember[cuda]' "
                "(cupy-cuda13x; 'ember[cuda12]' for CUDA 12 drivers)")
    if not getattr(nccl, "available", True):
        return "CuPy was built without NCCL support"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device is visible"
    except Exception as error:
        return f"CUDA is not usable ({error})"
    return None


class NCCLEngine:
    """Collectives of one NCCL communicator on contiguous CuPy arrays (results written into them)."""

    name = "nccl"
    devices = DEVICES

    def __init__(self, mpi, device_id=None):
        import cupy
        from cupy.cuda import nccl
        self._cp, self._nccl = cupy, nccl
        self.rank, self.size = mpi.rank, mpi.size
        index = _device_index(device_id)
        self.device = cupy.cuda.Device(index)
        uid = np.zeros(nccl.get_unique_id().__len__(), np.int8)
        if self.rank == 0:
            uid[:] = np.array(nccl.get_unique_id(), np.int8)
        if not poll(mpi.broadcast(uid, 0).test, time.monotonic() + 600):
            raise DistBackendError(f"nccl: rank {self.rank} timed out receiving the NCCL unique id from rank 0")
        with self.device:
            self.comm = nccl.NcclCommunicator(self.size, tuple(int(v) for v in uid), self.rank)
            self.stream = cupy.cuda.Stream(non_blocking=True)
        self._in_flight = InFlight()  # buffers of operations the stream has not finished
        self._types = _nccl_types(nccl)
        self._ops = {RedOpType.SUM: nccl.NCCL_SUM, RedOpType.PRODUCT: nccl.NCCL_PROD,
                     RedOpType.MIN: nccl.NCCL_MIN, RedOpType.MAX: nccl.NCCL_MAX}

    # -- staging -----------------------------------------------------------------------------
    def stage(self, t):
        data = t._data
        if data.flags.c_contiguous:
            return data
        with self.device:
            return self._cp.ascontiguousarray(data)

    def write_back(self, t, array):
        if array is t._data:
            def bump() -> None:
                t._version[0] += 1
            return bump
        return lambda: self.assign(t, array)

    def assign(self, t, array) -> None:
        with self.device:
            t._data[...] = array.reshape(t._data.shape)
        t._version[0] += 1

    def empty(self, shape, like):
        with self.device:
            return self._cp.empty(shape, dtype=like.dtype)

    def stack(self, arrays):
        with self.device:
            return self._cp.stack(arrays)

    def close(self) -> None:
        self.comm.destroy()

    # -- operations ----------------------------------------------------------------------------
    def broadcast(self, array, root: int) -> Pending:
        buf, dtype = self._bytes(array)
        return self._launch(lambda s: self.comm.broadcast(buf.data.ptr, buf.data.ptr, buf.size, dtype, root, s),
                            keep=(buf,))

    def all_reduce(self, array, op: RedOpType) -> Pending:
        buf, dtype, op_code, finish = self._reduction(array, op)
        return self._launch(lambda s: self.comm.allReduce(buf.data.ptr, buf.data.ptr, buf.size, dtype, op_code, s),
                            finish, (buf,))

    def reduce(self, array, root: int, op: RedOpType) -> Pending:
        buf, dtype, op_code, finish = self._reduction(array, op)
        return self._launch(lambda s: self.comm.reduce(buf.data.ptr, buf.data.ptr, buf.size, dtype, op_code,
                                                       root, s), finish if self.rank == root else None, (buf,))

    def all_gather(self, send, recv) -> Pending:
        sbuf, dtype = self._bytes(send)
        rbuf, _ = self._bytes(recv)
        return self._launch(lambda s: self.comm.allGather(sbuf.data.ptr, rbuf.data.ptr, sbuf.size, dtype, s),
                            keep=(sbuf, rbuf))

    def reduce_scatter(self, send, recv, op: RedOpType) -> Pending:
        sbuf, dtype, op_code, _ = self._reduction(send, op)
        rbuf, _, _, finish = self._reduction(recv, op)
        return self._launch(lambda s: self.comm.reduceScatter(sbuf.data.ptr, rbuf.data.ptr, rbuf.size, dtype,
                                                              op_code, s), finish, (sbuf, rbuf))

    def gather(self, send, recv, root: int) -> Pending:
        sbuf, dtype = self._bytes(send)

        def run(s):
            self._nccl.groupStart()
            self.comm.send(sbuf.data.ptr, sbuf.size, dtype, root, s)
            if recv is not None:
                rbuf = self._bytes(recv)[0].reshape(self.size, -1)
                for peer in range(self.size):
                    self.comm.recv(rbuf[peer].data.ptr, sbuf.size, dtype, peer, s)
            self._nccl.groupEnd()
        return self._launch(run, keep=(sbuf, recv))

    def scatter(self, send, recv, root: int) -> Pending:
        rbuf, dtype = self._bytes(recv)

        def run(s):
            self._nccl.groupStart()
            if send is not None:
                sbuf = self._bytes(send)[0].reshape(self.size, -1)
                for peer in range(self.size):
                    self.comm.send(sbuf[peer].data.ptr, rbuf.size, dtype, peer, s)
            self.comm.recv(rbuf.data.ptr, rbuf.size, dtype, root, s)
            self._nccl.groupEnd()
        return self._launch(run, keep=(rbuf, send))

    def send(self, array, dst: int, tag: int) -> Pending:
        buf, dtype = self._bytes(array)
        return self._launch(lambda s: self.comm.send(buf.data.ptr, buf.size, dtype, dst, s), keep=(buf,))

    def recv(self, array, src: int | None, tag: int) -> Pending:
        if src is None:
            raise DistBackendError("irecv: the NCCL backend needs an explicit src (NCCL has no any-source receive)")
        buf, dtype = self._bytes(array)
        pending = self._launch(lambda s: self.comm.recv(buf.data.ptr, buf.size, dtype, src, s), keep=(buf,))
        return Pending(pending.test, lambda: src, pending.device_wait, pending.keep)

    # -- helpers -------------------------------------------------------------------------------
    def _launch(self, run, finish=None, keep=()) -> Pending:
        """Run an NCCL call on the engine's stream after the caller's queued work. The arrays in ``keep`` stay
        out of the memory pool until the call is done; waiting puts the caller's current stream behind it."""
        cuda = self._cp.cuda
        with self.device:
            self.stream.wait_event(cuda.get_current_stream().record())
            run(self.stream.ptr)
            done = self.stream.record()
        self._in_flight.keep(done, *keep)

        def device_wait() -> None:
            with self.device:
                cuda.get_current_stream().wait_event(done)
        return Pending(lambda: done.done, finish, device_wait)

    def _bytes(self, array):
        """The array's bytes and NCCL's byte type: moving data needs no element type."""
        return array.reshape(-1).view(self._cp.uint8), self._types["uint8"]

    def _wire(self, array):
        """The flat array NCCL reduces, its NCCL dtype, and whether it is a converted copy."""
        flat = array.reshape(-1)
        name = flat.dtype.name
        if name == "bool":
            return flat.view(self._cp.uint8), self._types["uint8"], False
        if name == "int16":
            with self.device:
                return flat.astype(self._cp.int32), self._types["int32"], True
        if name in ("complex64", "complex128"):  # NCCL has no complex type: SUM and AVG reduce each part alike
            component = "float32" if name == "complex64" else "float64"
            return flat.view(component), self._types[component], False
        if name not in self._types:
            raise DistBackendError(f"nccl: dtype {name} is not supported by this NCCL build")
        return flat, self._types[name], False

    def _reduction(self, array, op: RedOpType):
        if op in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR):
            raise DistBackendError(f"nccl: ReduceOp.{op.name} is not supported by NCCL")
        buf, dtype, converted = self._wire(array)
        if array.dtype.name == "bool":
            op = _BOOL_OP.get(op, op)
        op_code = self._ops[RedOpType.SUM if op is RedOpType.AVG else op]
        flat, size = array.reshape(-1), self.size

        def finish() -> None:
            with self.device:
                result = buf
                if op is RedOpType.AVG:
                    result = result / size if result.dtype.kind in "fc" else self._cp.trunc(result / size)
                if flat.dtype.kind == "c" and result.dtype.kind == "f":  # the parts, as the complex values
                    result = result.view(flat.dtype)
                if result is not flat:
                    flat[...] = result.astype(flat.dtype)
        return buf, dtype, op_code, finish if (converted or op is RedOpType.AVG) else None


def _device_index(device_id) -> int:
    if device_id is None:
        return int(os.environ.get("LOCAL_RANK", "0"))
    return device_id if isinstance(device_id, int) else (getattr(device_id, "index", None) or 0)


def _nccl_types(nccl) -> dict[str, int]:
    names = {"uint8": "NCCL_UINT8", "int8": "NCCL_INT8", "int32": "NCCL_INT32", "int64": "NCCL_INT64",
             "float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64",
             "bfloat16": "NCCL_BFLOAT16"}
    return {dtype: getattr(nccl, const) for dtype, const in names.items() if hasattr(nccl, const)}
