"""Backends follow flag changes through ``ember.dispatch.watch_flags`` (the cuda backend sets CuPy's float32
GEMM compute type from the matmul precision this way: the CuPy call itself runs only on a GPU)."""
from __future__ import annotations

import ember
from ember.backends.cuda.matmul_precision import compute_type_name
from ember.dispatch import FLAGS, watch_flags
from ember.dispatch.contract import flags


def test_a_watcher_sees_every_change_of_any_spelling_of_the_switch():
    seen = []
    watch_flags(lambda name, value: seen.append((name, value)))
    before = ember.get_float32_matmul_precision()
    try:
        ember.set_float32_matmul_precision("high")
        ember.backends.cuda.matmul.allow_tf32 = False
        ember.set_float32_matmul_precision("medium")
    finally:
        flags._WATCHERS.pop()
        FLAGS.float32_matmul_precision = before
    assert [v for n, v in seen if n == "float32_matmul_precision"] == ["high", "highest", "medium"]


def test_tf32_follows_pytorchs_meaning_of_the_precisions():
    assert compute_type_name("highest") == "COMPUTE_TYPE_DEFAULT"
    assert compute_type_name("high") == compute_type_name("medium") == "COMPUTE_TYPE_TF32"
