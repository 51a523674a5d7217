"""``ember.utils.data._utils.collate``: where PyTorch programs import ``default_collate`` from."""
from ..collate import default_collate, default_convert

__all__ = ["default_collate", "default_convert"]
