"""Being written: PyTorch's initialisers."""
