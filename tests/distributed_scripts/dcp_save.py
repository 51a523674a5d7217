"""Saved at 4 ranks (argv[1]: checkpoint directory): uneven, empty and replicated pieces, plain tensors and
plain values; saved again into the same directory; loaded back at 4 ranks. Prints one summary line per rank."""
import json
import os
import sys

import dcp_common as c

import ember.distributed as dist
import ember.distributed.checkpoint as dcp

path = sys.argv[1]
dist.init_process_group("gloo")
rank = dist.get_rank()
checks = c.Checks()
check, raises = checks.check, checks.raises


def data_files():
    return sorted(n for n in os.listdir(path) if n.endswith(".distcp"))


first = dcp.save(c.state_dict(1, rank, c.BOUNDS_4), checkpoint_id=path)
dist.barrier()
entries = first.state_dict_metadata
check("replicated pieces written once", len(entries["optim.state.model.w.exp_avg"].chunks) == 2)
check("replicated pieces by the lowest ranks",
      sorted(ch.location.file[:3] for ch in entries["optim.state.model.w.exp_avg"].chunks) == ["__0", "__1"])
check("empty pieces not stored", [(ch.offset, ch.numel) for ch in entries["model.w"].chunks] == [(0, 13), (13, 22)])
check("a plain tensor written once", len(entries["model.i"].chunks) == 1)
check("one file per rank", data_files() == sorted(first.files))
with open(os.path.join(path, ".metadata")) as f:
    check("metadata is JSON", json.load(f)["save_id"] == first.save_id)
target = c.state_dict(None, rank, c.BOUNDS_4)
dcp.load(target, checkpoint_id=path)
check("first save loads", c.mismatches(target, 1, rank, c.BOUNDS_4) == [])

second = dcp.save(c.state_dict(2, rank, c.BOUNDS_4), checkpoint_id=path)
dist.barrier()
check("new save id", second.save_id != first.save_id)
check("files of the first save removed", data_files() == sorted(second.files))
target = c.state_dict(None, rank, c.BOUNDS_4)
dcp.load(target, checkpoint_id=path)
check("second save loads", c.mismatches(target, 2, rank, c.BOUNDS_4) == [])

print(checks.summary("dcp_save", rank), flush=True)
dist.destroy_process_group()
