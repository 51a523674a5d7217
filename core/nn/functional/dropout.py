"""Being written."""
__all__: list = []
