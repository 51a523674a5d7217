"""Collective engines: MPI through mpi4py (cpu, opencl) and NCCL through CuPy (cuda)."""
