"""Creation ops: new tensors from sizes and values (``creation``) and the window functions
(``windows``), on the ``device=`` given or the default device.
"""
