"""One rank of a job started by ``ember.distributed.run``: torchrun's environment, then the user's program.

``mpiexec`` starts this module once per rank. It derives torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE,
...) from what the MPI launcher set, records its pid for the launcher's failure report, and runs the script
or module as ``__main__``. A rank that fails leaves without finalising MPI, which makes ``mpiexec`` stop the
other ranks at once instead of leaving them to wait for it.
"""
from __future__ import annotations

import json
import os
import runpy
import sys
import traceback
from pathlib import Path


def torchrun_environment(env: dict[str, str]) -> dict[str, str]:
    """The variables torchrun gives a worker, from MPI's (PMI_RANK, ...) or a one-process default."""
    rank = int(env.get("PMI_RANK", "0"))
    world = int(env.get("PMI_SIZE", "1"))
    local_rank = int(env.get("MPI_LOCALRANKID", "0"))
    local_world = int(env.get("MPI_LOCALNRANKS", "1"))
    nproc = int(env.get("EMBER_NPROC_PER_NODE", str(local_world)))
    values = {
        "RANK": rank, "WORLD_SIZE": world, "LOCAL_RANK": local_rank, "LOCAL_WORLD_SIZE": local_world,
        "GROUP_RANK": rank // nproc, "GROUP_WORLD_SIZE": env.get("GROUP_WORLD_SIZE", max(1, world // nproc)),
        "ROLE_RANK": rank, "ROLE_WORLD_SIZE": world, "ROLE_NAME": env.get("ROLE_NAME", "default"),
        "TORCHELASTIC_RESTART_COUNT": 0, "TORCHELASTIC_MAX_RESTARTS": 0,
        "TORCHELASTIC_RUN_ID": env.get("TORCHELASTIC_RUN_ID", "none"),
        "MASTER_ADDR": env.get("MASTER_ADDR", "127.0.0.1"), "MASTER_PORT": env.get("MASTER_PORT", "29500"),
    }
    if world > 1 and "OMP_NUM_THREADS" not in env:
        values["OMP_NUM_THREADS"] = 1  # as torchrun: one rank per core should not oversubscribe threads
    return {k: str(v) for k, v in values.items()}


def main(argv: list[str]) -> None:
    mode, target, args = argv[0], argv[1], argv[2:]
    os.environ.update(torchrun_environment(dict(os.environ)))
    rank = int(os.environ["RANK"])
    run_dir = os.environ.get("EMBER_RUN_DIR")
    if run_dir:
        Path(run_dir, f"rank-{rank}.json").write_text(json.dumps({"pid": os.getpid(), "host": os.uname().nodename,
                                                                  "local_rank": os.environ["LOCAL_RANK"]}))
    if mode == "--no-python":
        os.execvp(target, [target, *args])
    sys.argv = [target, *args]
    try:
        if mode == "--module":
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        if code != 0:
            if not isinstance(done.code, int):
                print(done.code, file=sys.stderr)
            _fail(rank, run_dir, code, f"exited with code {code}")
        _finished(rank, run_dir)
        raise
    except BaseException as error:  # noqa: BLE001 - any failure of the user's program ends the job
        traceback.print_exc()
        _fail(rank, run_dir, 1, f"{type(error).__name__}: {error}")
    _finished(rank, run_dir)


def _finished(rank: int, run_dir: str | None) -> None:
    if run_dir:
        Path(run_dir, f"rank-{rank}.done").touch()


def _fail(rank: int, run_dir: str | None, code: int, message: str) -> None:
    """Report and leave at once, without MPI_Finalize: mpiexec then stops every other rank."""
    if run_dir:
        Path(run_dir, f"rank-{rank}.error").write_text(json.dumps({"exitcode": code, "message": message}))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
