"""``ember.cpu.amp``: ``torch.cpu.amp``'s autocast, GradScaler, custom_fwd and custom_bwd, on "cpu"."""
from ..amp.fixed_device import amp_for

autocast, GradScaler, custom_fwd, custom_bwd = amp_for("cpu")

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]
