"""The Chrome trace-event JSON of a profile (chrome://tracing, https://ui.perfetto.dev).

Host spans sit on one row per Python thread of this process. Each device the ops ran on gets a row of
its own: the ops' kernels there, at the device's own times where its backend timed them, else (the
CPU backend, which computes on the calling thread) at their host times. Flow arrows link each forward
op to the backward node it recorded ("fwdbwd") and each op to its work on a timed device ("ac2g").
"""
from __future__ import annotations

import gzip
import json
import os
import socket

from .events import OP, FunctionEvent

_DEVICE_PIDS = 1 << 20  # device rows get pids above any real one, in order of first use


def _metadata(name: str, pid: int, tid: int, args: dict) -> dict:
    return {"ph": "M", "name": name, "pid": pid, "tid": tid, "ts": 0, "args": args}


def _span(event: FunctionEvent, pid: int, tid: int, ts: float, dur: float, cat: str, args: dict) -> dict:
    return {"ph": "X", "cat": cat, "name": event.name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _host_args(event: FunctionEvent) -> dict:
    args: dict = {"External id": event.id}
    if event.kind == OP:
        args["Device"] = event.device
    if event.input_shapes:
        args["Input Dims"] = event.input_shapes
        args["Input type"] = event.input_dtypes
    if event.allocated_bytes:
        args["Allocated bytes"] = event.allocated_bytes
    if event.device_start_us is not None:
        args["Device time (us)"] = event.device_time_total
    if event.flops:
        args["FLOPs"] = event.flops
    if event.stack:
        args["Call stack"] = ";".join(event.stack)
    if event.annotation_args:
        args["Args"] = event.annotation_args
    if event.forward is not None:
        args["Forward op id"] = event.forward.id
    return args


def _flow(kind: str, flow_id: int, cat: str, pid: int, tid: int, ts: float) -> dict:
    flow = {"ph": kind, "id": flow_id, "cat": cat, "name": cat, "pid": pid, "tid": tid, "ts": ts}
    if kind == "f":
        flow["bp"] = "e"  # bind to the slice enclosing the arrow's end
    return flow


def chrome_trace(events: list[FunctionEvent], wall_start_ns: int = 0) -> dict:
    """The trace of ``events`` (times in microseconds from the profile's start) as a JSON-ready dict."""
    host = os.getpid()
    threads = sorted({event.thread for event in events})
    devices: dict[str, int] = {}
    for event in events:
        if event.kind == OP and event.device not in devices:
            devices[event.device] = _DEVICE_PIDS + len(devices)
    trace = [_metadata("process_name", host, 0, {"name": "python"}),
             _metadata("process_labels", host, 0, {"labels": "CPU"}),
             _metadata("process_sort_index", host, 0, {"sort_index": 0})]
    for tid in threads:
        trace.append(_metadata("thread_name", host, tid, {"name": f"thread {tid} (python)"}))
    for order, (device, pid) in enumerate(devices.items(), start=1):
        trace += [_metadata("process_name", pid, 0, {"name": device}),
                  _metadata("process_labels", pid, 0, {"labels": f"device {device}"}),
                  _metadata("process_sort_index", pid, 0, {"sort_index": order}),
                  _metadata("thread_name", pid, 0, {"name": f"{device} kernels"})]
    flows = 0
    for event in events:
        trace.append(_span(event, host, event.thread, event.start_us, event.cpu_time_total, event.kind,
                           _host_args(event)))
        if event.kind != OP:
            if event.forward is not None:
                flows += 1
                forward = event.forward
                trace.append(_flow("s", flows, "fwdbwd", host, forward.thread, forward.start_us))
                trace.append(_flow("f", flows, "fwdbwd", host, event.thread, event.start_us))
            continue
        pid = devices[event.device]
        if event.device_start_us is not None:
            trace.append(_span(event, pid, 0, event.device_start_us, event.device_time_total, "kernel",
                               {"External id": event.id, "device": event.device}))
            flows += 1
            trace.append(_flow("s", flows, "ac2g", host, event.thread, event.start_us))
            trace.append(_flow("f", flows, "ac2g", pid, 0, event.device_start_us))
        elif not event.cpu_children:  # computed on the calling thread: its host time is its device time
            trace.append(_span(event, pid, 0, event.start_us, event.cpu_time_total, "kernel",
                               {"External id": event.id, "device": event.device}))
    return {"schemaVersion": 1, "displayTimeUnit": "ms", "baseTimeNanoseconds": wall_start_ns,
            "host_name": socket.gethostname(), "traceEvents": trace}


def write_chrome_trace(path: str, events: list[FunctionEvent], wall_start_ns: int = 0) -> None:
    """Write the trace to ``path`` (gzip-compressed when it ends in ``.gz``)."""
    text = json.dumps(chrome_trace(events, wall_start_ns))
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
