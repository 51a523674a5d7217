"""``SummaryWriter``: PyTorch's API for logging to TensorBoard, over tensorboard's event-file writer."""
from __future__ import annotations

import os
import socket
import time
from datetime import datetime

from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import hparams as hparams_summaries
from . import images, summaries
from .graph import graph as trace_graph

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """One event file in ``log_dir``; events are queued and written by a background thread."""

    def __init__(self, log_dir, max_queue: int = 10, flush_secs: float = 120, filename_suffix: str = "") -> None:
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        return self.event_writer.get_logdir()

    def add_event(self, event: Event, step=None, walltime: float | None = None) -> None:
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary: Summary, global_step=None, walltime: float | None = None) -> None:
        self.add_event(Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_def, walltime: float | None = None) -> None:
        self.add_event(Event(graph_def=graph_def.SerializeToString()), None, walltime)

    def flush(self) -> None:
        self.event_writer.flush()

    def close(self) -> None:
        self.event_writer.close()


def _default_log_dir(comment: str) -> str:
    stamp = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")


class SummaryWriter:
    """Writes scalars, histograms, images, text, hparams and model graphs to event files in ``log_dir``.

    The default ``log_dir`` is ``runs/<month><day>_<hh-mm-ss>_<hostname><comment>``. With ``purge_step``,
    TensorBoard hides the events of this ``log_dir`` logged earlier at steps >= ``purge_step`` (a resumed
    run). After ``close()`` the writer may be used again; it then opens a new event file.
    """

    def __init__(self, log_dir: str | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: float = 120, filename_suffix: str = "") -> None:
        self.log_dir = log_dir if log_dir else _default_log_dir(comment)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer: FileWriter | None = None
        self.all_writers: dict[str, FileWriter] | None = None
        self.default_bins = list(summaries.tensorflow_bins())
        self._get_file_writer()

    def _get_file_writer(self) -> FileWriter:
        if self.file_writer is None or self.all_writers is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                # a restart at purge_step: TensorBoard drops the earlier events of this run from that step on
                self.file_writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str:
        return self.log_dir

    def add_scalar(self, tag: str, scalar_value, global_step=None, walltime: float | None = None,
                   new_style: bool = False, double_precision: bool = False) -> None:
        summary = summaries.scalar(tag, scalar_value, new_style=new_style, double_precision=double_precision)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step=None,
                    walltime: float | None = None) -> None:
        """Each entry goes to its own run, ``<log_dir>/<main_tag>_<key>``, under the tag ``main_tag``,
        so that TensorBoard draws them in one chart."""
        walltime = time.time() if walltime is None else walltime
        root = self._get_file_writer().get_logdir()
        for key, value in tag_scalar_dict.items():
            run_dir = f"{root}/{main_tag.replace('/', '_')}_{key}"
            writer = self.all_writers.get(run_dir)
            if writer is None:
                writer = FileWriter(run_dir, self.max_queue, self.flush_secs, self.filename_suffix)
                self.all_writers[run_dir] = writer
            writer.add_summary(summaries.scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag: str, values, global_step=None, bins="tensorflow",
                      walltime: float | None = None, max_bins: int | None = None) -> None:
        """``bins``: 'tensorflow' (TensorFlow's default exponential buckets), or anything
        ``numpy.histogram`` takes (a rule name such as 'auto' or 'fd', a count, the edges)."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        summary = summaries.histogram(tag, values, bins, max_bins=max_bins)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_image(self, tag: str, img_tensor, global_step=None, walltime: float | None = None,
                  dataformats: str = "CHW") -> None:
        """Float images are read as [0, 1], uint8 as [0, 255]; 'CHW', 'HWC', 'HW' and permutations."""
        summary = images.image(tag, img_tensor, dataformats, "add_image")
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_images(self, tag: str, img_tensor, global_step=None, walltime: float | None = None,
                   dataformats: str = "NCHW") -> None:
        """A batch of images shown as one grid, eight to a row."""
        summary = images.image(tag, img_tensor, dataformats, "add_images")
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step=None, walltime: float | None = None) -> None:
        self._get_file_writer().add_summary(summaries.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict: dict, metric_dict: dict, hparam_domain_discrete: dict | None = None,
                    run_name: str | None = None, global_step=None) -> None:
        """One hparams session in the sub-run ``<log_dir>/<run_name>`` (default: the current time),
        with each metric also logged there as a scalar."""
        experiment, start, end = hparams_summaries.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        run_dir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=run_dir) as run:
            for summary in (experiment, start, end):
                run.file_writer.add_summary(summary, global_step)
            for key, value in metric_dict.items():
                run.add_scalar(key, value, global_step)

    def add_graph(self, model, input_to_model=None, verbose: bool = False) -> None:
        """The graph of ``model`` run once on ``input_to_model`` (a Tensor or a tuple of Tensors), in
        eval mode: one node per leaf-module call and per functional op between modules."""
        self._get_file_writer().add_graph(trace_graph(model, input_to_model, verbose))

    def flush(self) -> None:
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self) -> None:
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> "SummaryWriter":
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        self.close()
