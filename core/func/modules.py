"""Modules made fit for the transforms."""
from __future__ import annotations

from ..nn.modules.normalization import _BatchNorm


def replace_all_batch_norm_modules_(root):
    """Every batch norm in ``root`` stops tracking running statistics (they would mix the elements of a vmap
    batch), in place, as ``torch.func.replace_all_batch_norm_modules_`` does; returns ``root``."""
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
