"""Tiny REAPI client helpers (BuildGrid's generated protos) for smoke.py and bench.py."""

import hashlib
import os
import time

import grpc

from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc
from buildgrid._protos.google.longrunning import operations_pb2, operations_pb2_grpc


def env_target() -> tuple[str, str]:
    """(host:port, instance) from the env, else from target/buildgrid/env."""
    url = os.environ.get("VERTER_REMOTE_URL")
    inst = os.environ.get("VERTER_REMOTE_INSTANCE")
    if url is None:
        home = os.environ.get(
            "VERTER_BUILDGRID_HOME", os.path.join(os.path.dirname(__file__), "..", "..", "target", "buildgrid")
        )
        with open(os.path.join(home, "env"), encoding="utf-8") as fh:
            kv = dict(line.strip().split("=", 1) for line in fh if "=" in line)
        url, inst = kv["VERTER_REMOTE_URL"], kv.get("VERTER_REMOTE_INSTANCE", "")
    return url.split("://", 1)[-1], inst or ""


def digest(data: bytes) -> re_pb2.Digest:
    return re_pb2.Digest(hash=hashlib.sha256(data).hexdigest(), size_bytes=len(data))


class Client:
    def __init__(self, target: str | None = None, instance: str | None = None):
        t, i = env_target() if target is None else (target, instance or "")
        self.target, self.instance = t, (i if instance is None else instance)
        self.channel = grpc.insecure_channel(self.target)
        self.cas = re_grpc.ContentAddressableStorageStub(self.channel)
        self.ac = re_grpc.ActionCacheStub(self.channel)
        self.exe = re_grpc.ExecutionStub(self.channel)
        self.ops = operations_pb2_grpc.OperationsStub(self.channel)

    def upload(self, blobs: list[bytes]) -> None:
        reqs = [re_pb2.BatchUpdateBlobsRequest.Request(digest=digest(b), data=b) for b in blobs]
        resp = self.cas.BatchUpdateBlobs(
            re_pb2.BatchUpdateBlobsRequest(instance_name=self.instance, requests=reqs), timeout=30
        )
        for r in resp.responses:
            assert r.status.code == 0, r

    def read(self, d: re_pb2.Digest) -> bytes:
        if d.size_bytes == 0:
            return b""
        resp = self.cas.BatchReadBlobs(re_pb2.BatchReadBlobsRequest(instance_name=self.instance, digests=[d]), timeout=30)
        assert resp.responses[0].status.code == 0, resp
        return resp.responses[0].data

    def make_action(
        self, argv: list[str], outputs: list[str] = (), salt: str = "", timeout_s: float = 0, upload: bool = True
    ) -> tuple[re_pb2.Action, re_pb2.Digest]:
        cmd = re_pb2.Command(arguments=argv, output_paths=sorted(outputs))
        cmd.environment_variables.add(name="PATH", value="/usr/bin:/bin")
        if salt:
            cmd.environment_variables.add(name="VERTER_SALT", value=salt)
        cmd_b = cmd.SerializeToString(deterministic=True)
        root_b = re_pb2.Directory().SerializeToString(deterministic=True)
        action = re_pb2.Action(command_digest=digest(cmd_b), input_root_digest=digest(root_b))
        if timeout_s:
            action.timeout.FromNanoseconds(int(timeout_s * 1e9))
        act_b = action.SerializeToString(deterministic=True)
        if upload:
            self.upload([cmd_b, root_b, act_b])
        return action, digest(act_b)

    def execute(self, action_digest: re_pb2.Digest, skip_cache: bool = False, on_op=None) -> re_pb2.ExecuteResponse:
        req = re_pb2.ExecuteRequest(
            instance_name=self.instance, action_digest=action_digest, skip_cache_lookup=skip_cache
        )
        last = None
        for op in self.exe.Execute(req, timeout=120):
            last = op
            if on_op:
                on_op(op)
            if op.done:
                break
        assert last is not None and last.done, last
        if last.HasField("error"):
            raise RuntimeError(f"operation error: {last.error}")
        resp = re_pb2.ExecuteResponse()
        last.response.Unpack(resp)
        return resp

    def get_action_result(self, action_digest: re_pb2.Digest) -> re_pb2.ActionResult | None:
        try:
            return self.ac.GetActionResult(
                re_pb2.GetActionResultRequest(instance_name=self.instance, action_digest=action_digest), timeout=30
            )
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.NOT_FOUND:
                return None
            raise

    def cancel(self, op_name: str) -> None:
        self.ops.CancelOperation(operations_pb2.CancelOperationRequest(name=op_name), timeout=30)


def timed(fn, *a, **kw):
    t = time.perf_counter()
    r = fn(*a, **kw)
    return r, time.perf_counter() - t
