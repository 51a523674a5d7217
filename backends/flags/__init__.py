"""PyTorch's ``torch.backends.*`` switch namespaces: ``cuda.matmul``, ``cudnn``, ``mps``.

These are not backend plugins: they are the PyTorch-shaped faces of the settings kept in
``ember.dispatch.contract.flags`` (where backends read them). They live here, apart from the plugin
packages beside them, and are re-exported only where PyTorch's paths demand it:
``ember.backends.cudnn`` and ``ember.backends.mps`` (see ``ember/backends/__init__.py``) and
``ember.backends.cuda.matmul`` / ``ember.backends.cuda.is_built`` (the cuda plugin's ``__init__``).
Importing them imports no CuPy.
"""
