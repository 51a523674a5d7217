"""init_process_group with a world size that disagrees with the MPI world: a clear error, no hang."""
import ember.distributed as dist

try:
    dist.init_process_group("gloo", init_method="env://")
except dist.DistNetworkError as error:
    print(f"DistNetworkError: {error}", flush=True)
else:
    print("no error", flush=True)
