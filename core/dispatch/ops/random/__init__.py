"""Random ops: the three sampler primitives backends implement and everything composed of them.

``random`` (the samplers, uniform, normal and integer, and rand, randn, randint, randperm, the ``*_like`` forms
and the in-place fills made of them), ``sampling`` (multinomial, bernoulli, normal, poisson from tensors of
parameters), ``binomial``, and Hoermann's transformed rejection loop the binomial and Poisson samplers share
(``rejection_sampling``); ``_shared`` holds the checks that read device values back in one transfer.
"""
