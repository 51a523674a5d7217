"""``ember.interop``: memory exchange with other array libraries (DLPack, the NumPy array protocol)."""
