"""Rough latency/throughput figures of a running fixture (trivial actions, loopback).

    target/buildgrid/venv/bin/python .ci/buildgrid/bench.py [--n 15] [--burst 200] [--inflight 50]

Prints medians (and p90 where useful). Every uncached action is unique (salted).
"""

import argparse
import os
import statistics
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
from rexec import Client, timed


def ms(xs):
    xs = sorted(xs)
    p90 = xs[min(len(xs) - 1, int(len(xs) * 0.9))]
    return f"median {statistics.median(xs) * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms   (n={len(xs)})"


def ts(t):
    return t.seconds + t.nanos / 1e9


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=15)
    ap.add_argument("--burst", type=int, default=200)
    ap.add_argument("--inflight", type=int, default=50)
    args = ap.parse_args()
    c = Client()
    run = uuid.uuid4().hex[:8]

    # warm-up (connections, first-use paths)
    for i in range(3):
        c.execute(c.make_action(["true"], salt=f"{run}-warm-{i}")[1])

    # 1. uncached Execute round trip, sequential
    rt, q2w = [], []
    for i in range(args.n):
        _, ad = c.make_action(["true"], salt=f"{run}-seq-{i}")
        resp, dt = timed(c.execute, ad)
        assert resp.status.code == 0 and not resp.cached_result
        md = resp.result.execution_metadata
        rt.append(dt)
        q2w.append(ts(md.worker_start_timestamp) - ts(md.queued_timestamp))
    print(f"uncached Execute round trip (true)  : {ms(rt)}")
    print(f"  of which queued -> worker start   : {ms(q2w)}")

    # 2. throughput with ~inflight concurrent Execute streams
    ads = [c.make_action(["true"], salt=f"{run}-burst-{i}")[1] for i in range(args.burst)]
    lat = []

    def one(ad):
        resp, dt = timed(c.execute, ad)
        assert resp.status.code == 0 and resp.result.exit_code == 0
        lat.append(dt)

    t = time.perf_counter()
    with ThreadPoolExecutor(args.inflight) as pool:
        list(pool.map(one, ads))
    wall = time.perf_counter() - t
    print(f"throughput, {args.inflight} in flight, {args.burst} actions: {args.burst / wall:6.1f} actions/s "
          f"(wall {wall:.1f} s); per-action {ms(lat)}")

    # 3. GetActionResult (hit) and 4. Execute answered from the cache
    _, ad = c.make_action(["true"], salt=f"{run}-cached")
    c.execute(ad)
    gar = [timed(c.get_action_result, ad)[1] for _ in range(max(args.n, 30))]
    print(f"GetActionResult (hit)               : {ms(gar)}")
    miss = [timed(c.get_action_result, c.make_action(["true"], salt=f"{run}-miss-{i}", upload=False)[1])[1]
            for i in range(max(args.n, 30))]
    print(f"GetActionResult (miss, NOT_FOUND)   : {ms(miss)}")
    hits = []
    for _ in range(max(args.n, 30)):
        resp, dt = timed(c.execute, ad)
        assert resp.cached_result
        hits.append(dt)
    print(f"Execute answered from the cache     : {ms(hits)}")

    # 5. CancelOperation of an executing `sleep 60`
    rpc, to_done, to_kill = [], [], []
    tmp = tempfile.mkdtemp(prefix="bench-cancel-")
    for i in range(min(args.n, 8)):
        pidfile = os.path.join(tmp, f"pid-{i}")
        _, ad = c.make_action(["sh", "-c", f"echo $$ > {pidfile}; exec sleep 60"], salt=f"{run}-cancel-{i}")
        state = {}
        executing = threading.Event()

        def on_op(op, state=state, executing=executing):
            state["name"] = op.name
            md = re_pb2.ExecuteOperationMetadata()
            op.metadata.Unpack(md)
            if md.stage == re_pb2.ExecutionStage.EXECUTING:
                executing.set()

        done = {}

        def run_it(ad=ad, on_op=on_op, done=done):
            try:
                c.execute(ad, on_op=on_op)
            except Exception as e:  # noqa: BLE001 -- cancelled op
                done["err"] = e
            done["t"] = time.perf_counter()

        th = threading.Thread(target=run_it)
        th.start()
        assert executing.wait(30)
        for _ in range(200):  # wait until the command really runs
            if os.path.exists(pidfile) and os.path.getsize(pidfile) > 0:
                break
            time.sleep(0.01)
        pid = int(open(pidfile).read())
        t0 = time.perf_counter()
        c.cancel(state["name"])
        t1 = time.perf_counter()
        rpc.append(t1 - t0)
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            # a killed child of the worker stays a zombie until reaped: check its state
            try:
                with open(f"/proc/{pid}/stat") as fh:
                    if fh.read().split(")")[-1].split()[0] == "Z":
                        break
            except (FileNotFoundError, ProcessLookupError):
                # gone between the two checks
                break
            if time.perf_counter() - t0 > 30:
                raise SystemExit("cancelled command still alive after 30 s")
            time.sleep(0.002)
        to_kill.append(time.perf_counter() - t0)
        th.join(30)
        to_done.append(done["t"] - t0)
    print(f"CancelOperation RPC                 : {ms(rpc)}")
    print(f"  cancel -> Execute stream ends     : {ms(to_done)}")
    print(f"  cancel -> command killed (worker) : {ms(to_kill)}")


if __name__ == "__main__":
    main()
