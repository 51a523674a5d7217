"""``ember.cuda.amp``: ``torch.cuda.amp``'s autocast, GradScaler, custom_fwd and custom_bwd, on "cuda"."""
from ..amp.fixed_device import amp_for

autocast, GradScaler, custom_fwd, custom_bwd = amp_for("cuda")

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]
