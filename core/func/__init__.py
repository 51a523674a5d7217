"""``ember.func``: PyTorch's ``torch.func`` function transforms.

Each transform is a dispatch mode (``vmap``, the forward-AD levels of ``jvp``) or a use of the autograd engine
(``grad``, ``vjp``), and the per-op rules they follow are fields of the op schema (``OpDef.batch``,
``OpDef.jvp``), so every op and every backend gets them at once. Transforms compose to any depth. See
docs/func.md.
"""
from .batched import debug_unwrap
from .functional_call import functional_call, stack_module_state
from .jacobians import hessian, jacfwd, jacrev
from .modules import replace_all_batch_norm_modules_
from .rearrange import rearrange
from .transforms import functionalize, grad, grad_and_value, jvp, linearize, vjp
from .vmap import vmap

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian",
           "functional_call", "stack_module_state", "functionalize", "rearrange", "debug_unwrap",
           "replace_all_batch_norm_modules_"]
