"""An MPI component of the workflow tests: a 1-D halo exchange with mpi4py
(``Sendrecv`` of boundary rows to both neighbours, periodic), a residual
``Allreduce`` and an object ``allreduce``/``bcast`` per step, in regions. It
writes what it sent and received (bytes, calls, its pid) to
``STATS/halo-RANK.json``, counted here, not by cctviz."""

import json
import os
import pickle
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

import cctviz

steps, stats = int(sys.argv[1]), Path(sys.argv[2])
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
up, down = (rank - 1) % size, (rank + 1) % size
grid = np.full((34, 48), float(rank))  # 32 rows and a halo row on each side
count = {"sendrecv_bytes": 0, "sendrecv_calls": 0, "allreduce_bytes": 0, "allreduce_calls": 0}
count.update(object_allreduce_bytes=0, object_allreduce_calls=0, bcast_bytes=0, bcast_calls=0)
for step in range(steps):
    with cctviz.region("halo"):
        for send_row, recv_row, dest, source in ((1, 33, up, down), (32, 0, down, up)):
            send, recv = grid[send_row].copy(), np.empty_like(grid[recv_row])
            comm.Sendrecv(send, dest=dest, recvbuf=recv, source=source)
            grid[recv_row] = recv
            count["sendrecv_bytes"] += send.nbytes + recv.nbytes
            count["sendrecv_calls"] += 1
    with cctviz.region("compute"):
        new = 0.25 * (grid[:-2] + grid[2:]) + 0.5 * grid[1:-1]
        local = np.array([np.abs(new - grid[1:-1]).sum()])
        grid[1:-1] = new
    with cctviz.region("residual"):
        total = np.empty_like(local)
        comm.Allreduce(local, total, op=MPI.SUM)
        count["allreduce_bytes"] += local.nbytes
        count["allreduce_calls"] += 1
        comm.allreduce(rank + 1, op=MPI.SUM)
        count["object_allreduce_bytes"] += len(pickle.dumps(rank + 1, MPI.pickle.PROTOCOL))
        count["object_allreduce_calls"] += 1
        got = comm.bcast({"step": step} if rank == 0 else None, root=0)
        count["bcast_bytes"] += len(pickle.dumps(got, MPI.pickle.PROTOCOL))  # the message
        count["bcast_calls"] += 1
comm.Barrier()
count.update(rank=rank, size=size, pid=os.getpid())
stats.mkdir(parents=True, exist_ok=True)
(stats / f"halo-{rank}.json").write_text(json.dumps(count))
