"""Neural-network ops: the layers of ``ember.nn`` and ``ember.nn.functional`` as ops of the schema.

Convolution (``conv``), pooling (``pooling``, ``max_pooling``), normalization, the losses (``losses``,
``pointwise_losses``, ``margin_losses``, ``ctc``), attention, recurrent layers, padding, layers (linear,
embedding, dropout), softmax, ``embedding_bag``, resampling (pixel shuffle, im2col) and distances.
``spatial`` holds the "int or tuple" attributes the spatial ops share and ``samples`` conformance-sample
pieces; ``_shared`` the private helpers one module uses from another (loss checks, pooling sizes, the
log-softmax reference).
"""
