"""Broader checks of the fixture's worker and server behaviour (beyond smoke.py).

    target/buildgrid/venv/bin/python .ci/buildgrid/selftest.py [--restart]

Input tree (files, executable bit, subdir, symlink), env, working_directory,
output directory (Tree), non-zero exit (not cached), Action.timeout
(DEADLINE_EXCEEDED), missing input blob (FAILED_PRECONDITION). With --restart:
runs `restart-server` while an action executes and checks the result arrives
through WaitExecution after the restart.
"""

import argparse
import os
import subprocess
import sys
import threading
import time
import uuid

import grpc

from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
from rexec import Client, digest

HERE = os.path.dirname(os.path.abspath(__file__))


def upload_action(c, cmd, root_blobs, root_digest, timeout_s=0):
    cmd_b = cmd.SerializeToString(deterministic=True)
    action = re_pb2.Action(command_digest=digest(cmd_b), input_root_digest=root_digest)
    if timeout_s:
        action.timeout.FromNanoseconds(int(timeout_s * 1e9))
    act_b = action.SerializeToString(deterministic=True)
    c.upload([cmd_b, act_b, *root_blobs])
    return digest(act_b)


def check_tree(c, salt):
    script = b"#!/bin/sh\necho \"script $1 $GREETING $(pwd | sed 's|.*/||')\"\n"
    data = b"payload\n"
    sub = re_pb2.Directory()
    sub.files.add(name="data.txt", digest=digest(data))
    sub_b = sub.SerializeToString(deterministic=True)
    pkg = re_pb2.Directory()
    pkg.files.add(name="run.sh", digest=digest(script), is_executable=True)
    pkg.directories.add(name="sub", digest=digest(sub_b))
    pkg.symlinks.add(name="link", target="sub/data.txt")
    pkg_b = pkg.SerializeToString(deterministic=True)
    root = re_pb2.Directory()
    root.directories.add(name="pkg", digest=digest(pkg_b))
    root_b = root.SerializeToString(deterministic=True)
    cmd = re_pb2.Command(
        arguments=["sh", "-c", "./run.sh arg > out/a.txt && mkdir -p d/e && cat link > d/e/f && cp run.sh d/x"],
        working_directory="pkg",
        output_paths=["d", "out/a.txt"],
    )
    cmd.environment_variables.add(name="GREETING", value=salt)
    cmd.environment_variables.add(name="PATH", value="/usr/bin:/bin")
    ad = upload_action(c, cmd, [script, data, sub_b, pkg_b, root_b], digest(root_b))
    r = c.execute(ad).result
    assert r.exit_code == 0, (r, c.read(r.stderr_digest))
    (f,) = r.output_files
    assert f.path == "out/a.txt" and c.read(f.digest) == f"script arg {salt} pkg\n".encode(), c.read(f.digest)
    (d,) = r.output_directories
    tree = re_pb2.Tree.FromString(c.read(d.tree_digest))
    assert d.path == "d" and [n.name for n in tree.root.directories] == ["e"], tree
    x = [n for n in tree.root.files if n.name == "x"][0]
    assert x.is_executable, tree
    (e,) = tree.children
    assert c.read(e.files[0].digest) == data
    print("tree/env/working_directory/output dir: OK")


def check_failure_not_cached(c, salt):
    _, ad = c.make_action(["sh", "-c", "echo oops >&2; exit 3"], salt=salt)
    resp = c.execute(ad)
    assert resp.status.code == 0 and resp.result.exit_code == 3, resp
    assert c.read(resp.result.stderr_digest) == b"oops\n"
    assert c.get_action_result(ad) is None, "failed action must not be cached"
    print("non-zero exit reported, not cached: OK")


def check_timeout(c, salt):
    _, ad = c.make_action(["sleep", "30"], salt=salt, timeout_s=0.5)
    t = time.perf_counter()
    resp = c.execute(ad)
    dt = time.perf_counter() - t
    assert resp.status.code == grpc.StatusCode.DEADLINE_EXCEEDED.value[0], resp.status
    assert dt < 10, dt
    assert c.get_action_result(ad) is None
    print(f"Action.timeout -> DEADLINE_EXCEEDED in {dt:.2f}s: OK")


def check_missing_input(c, salt):
    cmd = re_pb2.Command(arguments=["true"])
    cmd.environment_variables.add(name="S", value=salt)
    root = re_pb2.Directory()
    root.files.add(name="gone", digest=digest(b"never uploaded " + salt.encode()))
    root_b = root.SerializeToString(deterministic=True)
    ad = upload_action(c, cmd, [root_b], digest(root_b))
    resp = c.execute(ad)
    assert resp.status.code == grpc.StatusCode.FAILED_PRECONDITION.value[0], resp.status
    print("missing input blob -> FAILED_PRECONDITION: OK")


def check_restart(c, salt):
    _, ad = c.make_action(["sh", "-c", "sleep 3; echo done > r.txt"], outputs=["r.txt"], salt=salt)
    name = {}
    started = threading.Event()

    def on_op(op):
        name["op"] = op.name
        md = re_pb2.ExecuteOperationMetadata()
        op.metadata.Unpack(md)
        if md.stage == re_pb2.ExecutionStage.EXECUTING:
            started.set()

    err = {}

    def run():
        try:
            c.execute(ad, on_op=on_op)
        except grpc.RpcError as e:
            err["e"] = e

    th = threading.Thread(target=run)
    th.start()
    assert started.wait(30)
    t = time.perf_counter()
    subprocess.run([os.path.join(HERE, "restart-server")], check=True)
    print(f"  restart-server took {time.perf_counter() - t:.1f}s")
    th.join(30)
    assert "e" in err, "the Execute stream should have broken on restart"
    # Reconnect like a client would.
    req = re_pb2.WaitExecutionRequest(name=name["op"])
    last = None
    for op in c.exe.WaitExecution(req, timeout=60):
        last = op
    assert last.done, last
    resp = re_pb2.ExecuteResponse()
    last.response.Unpack(resp)
    assert resp.status.code == 0 and resp.result.exit_code == 0, resp
    assert c.read(resp.result.output_files[0].digest) == b"done\n"
    print(f"restart mid-build: result via WaitExecution after {time.perf_counter() - t:.1f}s: OK")
    # and the workers serve new work after the restart
    _, ad2 = c.make_action(["true"], salt=salt + "-after")
    assert c.execute(ad2).result.exit_code == 0
    print("new work after restart: OK")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--restart", action="store_true")
    args = ap.parse_args()
    c = Client()
    salt = uuid.uuid4().hex
    check_tree(c, salt)
    check_failure_not_cached(c, salt)
    check_timeout(c, salt)
    check_missing_input(c, salt)
    if args.restart:
        check_restart(c, salt)
    print("selftest: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
