"""Placeholder: filled later."""
KERNELS: dict = {}
