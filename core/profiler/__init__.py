"""``ember.profiler``: PyTorch's ``torch.profiler`` on Ember's dispatch modes.

``profile`` records every op call (named ``ember::<op>``, a custom op by its ``namespace::name``), every backward
node (``MulBackward``) and every ``record_function`` span, as a tree with host time, device time where the backend
times itself (``Backend.device_timer``), input shapes, output memory and FLOPs; ``key_averages().table()`` sums
it up and ``export_chrome_trace`` draws it, one row per thread and per device.
"""
from .activity import ProfilerActivity, supported_activities
from .averages import FunctionEventAvg
from .event_list import EventList
from .events import FunctionEvent
from .profile import profile, tensorboard_trace_handler
from .record_function import record_function
from .schedule import ProfilerAction, schedule

__all__ = ["profile", "record_function", "schedule", "ProfilerAction", "ProfilerActivity", "supported_activities",
           "tensorboard_trace_handler", "EventList", "FunctionEvent", "FunctionEventAvg"]
