"""Linear algebra: matmul and the products composed from it, the decompositions (the few LAPACK-backed
primitives), and everything composed of them.

``linalg`` (matmul, bmm, mm, einsum), ``products``, ``decompositions``, ``linalg_solvers`` (solve, inv,
det, Cholesky), ``linalg_functions``, ``linalg_norms`` and ``linalg_householder``. ``matrices`` holds the
dtype rules and small matrix pieces the declarations share; ``_shared`` the private helpers one module
uses from another (the LU-based inverse, matmul's meta).
"""
