"""One op call's path, from ``F.add(x, y)`` to the result tensor.

``dispatcher.call`` (and the elementwise fast keys, ``fastpath``) runs the dispatch modes (``modes``), finds
or builds the call's cached ``CallPlan`` (``plan``; on a miss it binds, validates and promotes the call) and
hands it to ``executor``, which runs the backend's kernel or the op's composite and records autograd.
Around that path: ``out=`` (``out_argument``), the explicit CPU fallback (``fallback``), kernel and memory
errors (``kernel_errors``, ``memory``), cross-device copies (``transfer``), dtypes a device only stores
(``storage_dtypes``), the user's frame that warnings point at (``caller``), and the two interfaces dispatch
calls upward, the tensor type and the autograd recorder (``links``).

A room of its own so that a call, hit or miss, stays inside it and the rooms below it (the schema, the
contract); the declarations in ``ops/`` reach it through ``F`` (``ops/namespace.py``) and a few helpers
(``note_value_read``, ``checking_results``, ``wrap_dim``, ``links``).
"""
