"""GPU check of the cuDNN path (``scripts/check_cuda.sh`` runs it): ``python scripts/check_cudnn.py``.

Compares cuDNN convolutions with the fallback path (``ember.backends.cudnn.flags(enabled=False)``) on the GPU,
values and gradients, in float32, float16 and bfloat16, then times forward + backward of the benchmark CNN's
conv layers both ways; then the same for cuDNN's fused attention (float16 and bfloat16, causal and not, with
the log-sum-exp's gradient too) against the shared array kernels. Exits 0 with a note where cuDNN is not
available; 1 if a comparison fails.
"""
from __future__ import annotations

import sys
import time

import numpy as np

import ember
import ember.nn.functional as F

#: (name, op, input shape, weight shape, keyword arguments); the first two are the benchmark CNN's conv layers
CASES = [
    ("cnn.conv1", F.conv2d, (64, 1, 28, 28), (16, 1, 3, 3), {"padding": 1}),
    ("cnn.conv2", F.conv2d, (64, 16, 14, 14), (32, 16, 3, 3), {"padding": 1}),
    ("strided-dilated-groups", F.conv2d, (8, 8, 17, 15), (12, 4, 3, 2), {"stride": 2, "dilation": (1, 2),
                                                                        "padding": (1, 0), "groups": 2}),
    ("same-even-kernel", F.conv2d, (4, 3, 12, 12), (5, 3, 4, 4), {"padding": "same"}),
    ("conv1d", F.conv1d, (8, 4, 33), (6, 4, 5), {"stride": 2, "padding": 2}),
    ("conv3d", F.conv3d, (2, 3, 8, 9, 7), (4, 3, 3, 3, 3), {"padding": 1, "stride": (1, 2, 1)}),
    ("conv_transpose2d", F.conv_transpose2d, (4, 8, 7, 7), (8, 3, 3, 3), {"stride": 2, "padding": 1,
                                                                          "output_padding": 1}),
]
TOLERANCE = {"float32": 1e-2, "float16": 2e-2, "bfloat16": 8e-2}  # relative to the result's largest magnitude


def _step(op, x, w, b, kwargs):
    x.grad = w.grad = b.grad = None
    out = op(x, w, b, **kwargs)
    (out * out).sum().backward()
    return [t.detach().float().cpu().numpy() for t in (out, x.grad, w.grad, b.grad)]


def _timed(op, x, w, b, kwargs, rounds: int = 20) -> float:
    _step(op, x, w, b, kwargs)
    ember.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        x.grad = w.grad = b.grad = None
        op(x, w, b, **kwargs).sum().backward()
        ember.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


#: (name, query, key, value shapes, is_causal): GPT's and the Transformer benchmark's attention, and odd sizes
ATTENTION = [
    ("gpt", (64, 3, 32, 16), (64, 3, 32, 16), (64, 3, 32, 16), True),
    ("transformer", (16, 4, 64, 32), (16, 4, 64, 32), (16, 4, 64, 32), False),
    ("cross, more keys", (2, 8, 40, 64), (2, 8, 72, 64), (2, 8, 72, 64), False),
    ("causal, fewer keys", (3, 2, 50, 128), (3, 2, 24, 128), (3, 2, 24, 128), True),
]


def _attention_step(q, k, v, causal: bool):
    """Values and gradients of the output and of the log-sum-exp (through both, as the fused op's derivative)."""
    for t in (q, k, v):
        t.grad = None
    out, lse = ember._scaled_dot_product_fused_attention(q, k, v, causal)
    (out.float() * out.float()).sum().backward(retain_graph=True)
    first = [t.grad.float().cpu().numpy() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    (out.float().sum() + lse.sum()).backward()
    second = [t.grad.float().cpu().numpy() for t in (q, k, v)]
    return [out.detach().float().cpu().numpy(), lse.detach().float().cpu().numpy()] + first + second


def _check_attention() -> int:
    """cuDNN's SDPA (float16, bfloat16) against the shared array kernel; then forward + backward timings."""
    failures = 0
    for dtype_name in ("float16", "bfloat16"):
        dtype = getattr(ember, dtype_name)
        for name, qs, ks, vs, causal in ATTENTION:
            ember.manual_seed(0)
            q, k, v = (ember.randn(s, device="cuda", dtype=dtype).requires_grad_() for s in (qs, ks, vs))
            fast = _attention_step(q, k, v, causal)
            with ember.backends.cudnn.flags(enabled=False):
                slow = _attention_step(q, k, v, causal)
            errors = [float(np.max(np.abs(f - s)) / max(float(np.max(np.abs(s))), 1e-6)) for f, s in zip(fast, slow)]
            ok = max(errors) <= TOLERANCE[dtype_name]
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {dtype_name:8} attention {name:18} causal={causal!s:5} relative errors "
                  "out/lse/dq/dk/dv/(with dlse) dq/dk/dv " + " ".join(f"{e:.1e}" for e in errors))
    for name, qs, ks, vs, causal in ATTENTION[:2]:
        q, k, v = (ember.randn(s, device="cuda", dtype=ember.float16).requires_grad_() for s in (qs, ks, vs))

        def step():
            ember.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal).sum().backward()
        fast = _timed_call(step)
        with ember.backends.cudnn.flags(enabled=False):
            slow = _timed_call(step)
        print(f"speed float16 attention {name}: forward+backward {fast:.3f} ms with cuDNN, {slow:.3f} ms array "
              f"kernels ({slow / fast:.1f}x)")
    return failures


def _timed_call(step, rounds: int = 20) -> float:
    step()
    ember.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        step()
        ember.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def main() -> int:
    if not ember.backends.cudnn.is_available():
        print("cudnn check skipped: cuDNN is not available (nvidia-cudnn-frontend or libcudnn missing, or no GPU)")
        return 0
    from ember.backends.cuda.cudnn import refusals
    print(f"cuDNN {ember.backends.cudnn.version()}; allow_tf32={ember.backends.cudnn.allow_tf32}")
    failures = 0
    for dtype_name, tolerance in TOLERANCE.items():
        dtype = getattr(ember, dtype_name)
        for name, op, x_shape, w_shape, kwargs in CASES:
            ember.manual_seed(0)
            out_channels = w_shape[1] * kwargs.get("groups", 1) if op is F.conv_transpose2d else w_shape[0]
            x, w, b = (ember.randn(s, device="cuda", dtype=dtype).requires_grad_()
                       for s in (x_shape, w_shape, (out_channels,)))
            fast = _step(op, x, w, b, kwargs)
            with ember.backends.cudnn.flags(enabled=False):
                slow = _step(op, x, w, b, kwargs)
            errors = [float(np.max(np.abs(f - s)) / max(float(np.max(np.abs(s))), 1e-6)) for f, s in zip(fast, slow)]
            ok = max(errors) <= tolerance
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {dtype_name:8} {name:24} relative errors out/dx/dw/db "
                  + " ".join(f"{e:.1e}" for e in errors))
    for name, op, x_shape, w_shape, kwargs in CASES[:2]:
        x, w, b = (ember.randn(s, device="cuda").requires_grad_() for s in (x_shape, w_shape, (w_shape[0],)))
        fast = _timed(op, x, w, b, kwargs)
        with ember.backends.cudnn.flags(enabled=False):
            slow = _timed(op, x, w, b, kwargs)
        print(f"speed float32 {name}: forward+backward {fast:.3f} ms with cuDNN, {slow:.3f} ms im2col "
              f"({slow / fast:.1f}x)")
    failures += _check_attention()
    for key, reason in refusals().items():
        print(f"refused by cuDNN (fallback used): {key}: {reason}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
