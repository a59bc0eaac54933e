"""Minimal Remote Workers API (Bots) worker for BuildGrid -- A TEST FIXTURE.

    *** NOT FOR PRODUCTION. NO SANDBOX. ***
    Commands run directly on this machine, as the user running this script,
    with only the environment the Command specifies. Anything that can submit
    an Execute request to the server can run anything as that user.
    Real deployments run their cluster's own workers (e.g. buildbox-worker +
    buildbox-run); this exists only because BuildGrid ships no worker and
    verter's integration tests need a real REAPI server with real workers.

What it does (google.devtools.remoteworkers.v1test2.Bots, one lease at a time):
  * CreateBotSession with a STABLE bot id (the server then replaces any older
    session of the same bot), then an UpdateBotSession loop: long-poll while
    idle; while a lease runs, poll every --poll seconds to notice cancellation.
  * For each lease: fetch Action, Command and the input tree from the CAS
    (GetTree + BatchReadBlobs, ByteStream for big blobs), materialise the input
    root in a fresh temp dir, run the command (cwd = working_directory, env =
    the Command's variables only, timeout = Action.timeout), upload outputs,
    stdout and stderr, and return the ActionResult in the lease (COMPLETED).
  * Cancellation: BuildGrid 0.4.4 drops a cancelled lease from the session it
    returns (the spec also allows state CANCELLED); either way the process
    group of the running command is killed and nothing is reported.
  * Server restarts: every RPC is retried on UNAVAILABLE & co with backoff; the
    session (kept in PostgreSQL) is reused, and a lease that finished while the
    server was down is reported when it is back. If the server no longer knows
    the session, the worker kills what it runs and creates a new session.

Usage: worker.py --target 127.0.0.1:50051 --instance '' --bot-id verter-worker-0
                 [--work-dir DIR] [--ready-file FILE] [--poll 0.05]
"""

import argparse
import hashlib
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field

import grpc
from google.protobuf import timestamp_pb2

from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc
from buildgrid._protos.google.bytestream import bytestream_pb2, bytestream_pb2_grpc
from buildgrid._protos.google.devtools.remoteworkers.v1test2 import bots_pb2, bots_pb2_grpc, worker_pb2
from buildgrid._protos.google.rpc import code_pb2, status_pb2

LOG = logging.getLogger("worker")

RETRYABLE = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.ABORTED,
}
MAX_BATCH = 2 * 1024 * 1024  # bytes per BatchRead/UpdateBlobs request
STREAM_CHUNK = 1024 * 1024


def now_ts() -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.GetCurrentTime()
    return ts


def digest_of(data: bytes) -> re_pb2.Digest:
    return re_pb2.Digest(hash=hashlib.sha256(data).hexdigest(), size_bytes=len(data))


class Backoff:
    """Retry delays 0.05 s doubling to 0.5 s; logs the first failure of an outage
    and then every 10 s, not every attempt."""

    def __init__(self, what: str, max_delay: float = 0.5):
        self.what, self.delay, self.since, self.logged = what, 0.05, None, 0.0
        self.max_delay = max_delay

    def fail(self, e: grpc.RpcError) -> None:
        now = time.monotonic()
        if self.since is None:
            self.since = now
        if now - self.logged >= 10:
            LOG.info("%s: %s (%s); retrying", self.what, e.code().name, e.details())
            self.logged = now
        time.sleep(self.delay)
        self.delay = min(self.delay * 2, self.max_delay)

    def ok(self) -> None:
        if self.since is not None:
            LOG.info("%s: back after %.1fs", self.what, time.monotonic() - self.since)
        self.delay, self.since, self.logged = 0.05, None, 0.0


def retrying(fn, *args, what: str, budget: float = 120.0, **kwargs):
    """Call fn, retrying transient gRPC errors (e.g. a server restart) for `budget` s."""
    deadline = time.monotonic() + budget
    backoff = Backoff(what)
    while True:
        try:
            r = fn(*args, **kwargs)
            backoff.ok()
            return r
        except grpc.RpcError as e:
            if e.code() not in RETRYABLE or time.monotonic() > deadline:
                raise
            backoff.fail(e)


class Cas:
    def __init__(self, channel: grpc.Channel, instance: str):
        self.instance = instance
        self.cas = re_grpc.ContentAddressableStorageStub(channel)
        self.bs = bytestream_pb2_grpc.ByteStreamStub(channel)

    def _prefix(self) -> str:
        return f"{self.instance}/" if self.instance else ""

    def read_many(self, digests) -> dict:
        """hash -> bytes for every digest (deduplicated)."""
        out, small, big = {}, [], []
        for d in {(d.hash, d.size_bytes) for d in digests}:
            if d[1] == 0:
                out[d[0]] = b""
            elif d[1] > MAX_BATCH // 2:
                big.append(d)
            else:
                small.append(d)
        batch, size = [], 0
        for d in small + [None]:
            if d is None or size + d[1] > MAX_BATCH:
                if batch:
                    req = re_pb2.BatchReadBlobsRequest(
                        instance_name=self.instance,
                        digests=[re_pb2.Digest(hash=h, size_bytes=s) for h, s in batch],
                    )
                    resp = retrying(self.cas.BatchReadBlobs, req, timeout=60, what="BatchReadBlobs")
                    for r in resp.responses:
                        if r.status.code != code_pb2.OK:
                            raise MissingBlob(r.digest, r.status.message)
                        out[r.digest.hash] = r.data
                batch, size = [], 0
            if d is not None:
                batch.append(d)
                size += d[1]
        for h, s in big:
            name = f"{self._prefix()}blobs/{h}/{s}"
            chunks = retrying(
                lambda: b"".join(c.data for c in self.bs.Read(bytestream_pb2.ReadRequest(resource_name=name), timeout=300)),
                what="ByteStream.Read",
            )
            out[h] = chunks
        return out

    def read(self, digest: re_pb2.Digest) -> bytes:
        return self.read_many([digest])[digest.hash]

    def get_tree(self, root: re_pb2.Digest) -> dict:
        """hash -> Directory for the whole tree under root."""
        dirs = {}
        if root.size_bytes == 0:
            dirs[root.hash] = re_pb2.Directory()
            return dirs
        token = ""
        while True:
            req = re_pb2.GetTreeRequest(instance_name=self.instance, root_digest=root, page_token=token)

            def call():
                return list(self.cas.GetTree(req, timeout=120))

            for page in retrying(call, what="GetTree"):
                for d in page.directories:
                    dirs[digest_of(d.SerializeToString(deterministic=True)).hash] = d
                token = page.next_page_token
            if not token:
                break
        if root.hash not in dirs:  # serialisation mismatch: fall back to walking
            dirs.clear()
            todo = [root]
            while todo:
                blobs = self.read_many(todo)
                todo = []
                for h, data in blobs.items():
                    d = re_pb2.Directory.FromString(data)
                    dirs[h] = d
                    todo.extend(c.digest for c in d.directories if c.digest.hash not in dirs)
        return dirs

    def upload(self, blobs: dict) -> None:
        """blobs: hash -> (Digest, bytes). Uploads the ones the CAS lacks."""
        blobs = {h: v for h, v in blobs.items() if v[0].size_bytes > 0}  # the empty blob needs no upload
        if not blobs:
            return
        req = re_pb2.FindMissingBlobsRequest(instance_name=self.instance, blob_digests=[d for d, _ in blobs.values()])
        missing = retrying(self.cas.FindMissingBlobs, req, timeout=60, what="FindMissingBlobs").missing_blob_digests
        batch, size = [], 0
        todo = [blobs[m.hash] for m in missing]
        for item in todo + [None]:
            if item is None or size + item[0].size_bytes > MAX_BATCH:
                if batch:
                    req = re_pb2.BatchUpdateBlobsRequest(
                        instance_name=self.instance,
                        requests=[re_pb2.BatchUpdateBlobsRequest.Request(digest=d, data=b) for d, b in batch],
                    )
                    resp = retrying(self.cas.BatchUpdateBlobs, req, timeout=60, what="BatchUpdateBlobs")
                    for r in resp.responses:
                        if r.status.code != code_pb2.OK:
                            raise RuntimeError(f"upload of {r.digest.hash} failed: {r.status.message}")
                batch, size = [], 0
            if item is None:
                break
            if item[0].size_bytes > MAX_BATCH // 2:
                self._write_stream(*item)
            else:
                batch.append(item)
                size += item[0].size_bytes

    def _write_stream(self, digest: re_pb2.Digest, data: bytes) -> None:
        def call():
            name = f"{self._prefix()}uploads/{uuid.uuid4()}/blobs/{digest.hash}/{digest.size_bytes}"

            def reqs():
                off = 0
                while True:
                    chunk = data[off : off + STREAM_CHUNK]
                    last = off + len(chunk) >= len(data)
                    yield bytestream_pb2.WriteRequest(
                        resource_name=name if off == 0 else "", write_offset=off, data=chunk, finish_write=last
                    )
                    off += len(chunk)
                    if last:
                        return

            return self.bs.Write(reqs(), timeout=300)

        retrying(call, what="ByteStream.Write")


class MissingBlob(Exception):
    def __init__(self, digest, message):
        super().__init__(f"missing blob {digest.hash}/{digest.size_bytes}: {message}")
        self.digest = digest


@dataclass
class Job:
    lease_id: str
    payload: object
    cancelled: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    proc: subprocess.Popen | None = None
    result: re_pb2.ActionResult | None = None
    status: status_pb2.Status | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def kill(self) -> None:
        self.cancelled.set()
        with self.lock:
            p = self.proc
        if p is not None and p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class Runner:
    """Executes one lease (in a thread)."""

    def __init__(self, cas: Cas, bot_id: str, work_dir: str):
        self.cas = cas
        self.bot_id = bot_id
        self.work_dir = work_dir
        self._pending: dict = {}  # blobs to upload: hash -> (Digest, bytes)

    def run(self, job: Job) -> None:
        meta = re_pb2.ExecutedActionMetadata(worker=self.bot_id, worker_start_timestamp=now_ts())
        root = None
        try:
            payload = job.payload
            if payload.Is(re_pb2.Action.DESCRIPTOR):
                action = re_pb2.Action()
                payload.Unpack(action)
            else:
                d = re_pb2.Digest()
                payload.Unpack(d)
                action = re_pb2.Action.FromString(self.cas.read(d))
            meta.input_fetch_start_timestamp.CopyFrom(now_ts())
            command = re_pb2.Command.FromString(self.cas.read(action.command_digest))
            root = tempfile.mkdtemp(prefix=f"lease-{job.lease_id[:8]}-", dir=self.work_dir)
            self.materialize(action.input_root_digest, root)
            meta.input_fetch_completed_timestamp.CopyFrom(now_ts())
            if job.cancelled.is_set():
                return
            result, code, message = self.execute(job, action, command, root, meta)
            if job.cancelled.is_set():
                return
            meta.output_upload_start_timestamp.CopyFrom(now_ts())
            self.collect_outputs(command, os.path.join(root, command.working_directory), result)
            meta.output_upload_completed_timestamp.CopyFrom(now_ts())
            meta.worker_completed_timestamp.CopyFrom(now_ts())
            result.execution_metadata.CopyFrom(meta)
            job.result = result
            job.status = status_pb2.Status(code=code, message=message)
        except MissingBlob as e:
            LOG.warning("lease %s: %s", job.lease_id, e)
            job.status = status_pb2.Status(code=code_pb2.FAILED_PRECONDITION, message=str(e))
        except grpc.RpcError as e:
            LOG.warning("lease %s: CAS error %s: %s", job.lease_id, e.code().name, e.details())
            job.status = status_pb2.Status(code=code_pb2.UNAVAILABLE, message=f"worker CAS error: {e.details()}")
        except Exception as e:  # noqa: BLE001 -- report, never die
            LOG.exception("lease %s failed", job.lease_id)
            job.status = status_pb2.Status(code=code_pb2.INTERNAL, message=f"worker error: {e!r}")
        finally:
            if root is not None:
                shutil.rmtree(root, ignore_errors=True)
                for leftover in (root + ".stdout", root + ".stderr"):
                    if os.path.exists(leftover):
                        os.unlink(leftover)
            job.done.set()

    def materialize(self, root_digest: re_pb2.Digest, root: str) -> None:
        dirs = self.cas.get_tree(root_digest)
        files = []  # (path, digest, executable)

        def walk(digest, path):
            d = dirs[digest.hash]
            for f in d.files:
                files.append((os.path.join(path, f.name), f.digest, f.is_executable))
            for s in d.symlinks:
                os.symlink(s.target, os.path.join(path, s.name))
            for c in d.directories:
                sub = os.path.join(path, c.name)
                os.mkdir(sub)
                walk(c.digest, sub)

        walk(root_digest, root)
        blobs = self.cas.read_many([d for _, d, _ in files])
        for path, d, exe in files:
            with open(path, "wb") as fh:
                fh.write(blobs[d.hash])
            os.chmod(path, 0o755 if exe else 0o644)

    def execute(self, job, action, command, root, meta):
        cwd = os.path.join(root, command.working_directory)
        os.makedirs(cwd, exist_ok=True)
        outputs = list(command.output_paths) or list(command.output_files) + list(command.output_directories)
        for p in outputs:  # parents of outputs exist, the outputs themselves do not (REAPI)
            os.makedirs(os.path.dirname(os.path.join(cwd, p)) or cwd, exist_ok=True)
        env = {v.name: v.value for v in command.environment_variables}
        argv = list(command.arguments)
        if not argv:
            return re_pb2.ActionResult(), code_pb2.INVALID_ARGUMENT, "Command has no arguments"
        if "/" not in argv[0]:
            exe = shutil.which(argv[0], path=env.get("PATH", os.environ.get("PATH", os.defpath)))
            if exe:
                argv[0] = exe
        elif not os.path.isabs(argv[0]):
            argv[0] = os.path.join(cwd, argv[0])
        timeout = action.timeout.ToTimedelta().total_seconds() if action.HasField("timeout") else None
        out_path = root + ".stdout"
        err_path = root + ".stderr"
        code, message = code_pb2.OK, ""
        meta.execution_start_timestamp.CopyFrom(now_ts())
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            try:
                with job.lock:
                    if job.cancelled.is_set():
                        return re_pb2.ActionResult(), code_pb2.CANCELLED, "cancelled"
                    job.proc = subprocess.Popen(
                        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                        start_new_session=True,
                    )
                try:
                    exit_code = job.proc.wait(timeout=timeout if timeout and timeout > 0 else None)
                except subprocess.TimeoutExpired:
                    code, message = code_pb2.DEADLINE_EXCEEDED, f"action timed out after {timeout}s"
                    exit_code = None
                try:  # also ends anything the command left running in the background
                    os.killpg(job.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                if exit_code is None:
                    exit_code = job.proc.wait()
                if exit_code < 0:  # killed by a signal: report it the way a shell does
                    exit_code = 128 - exit_code
            except OSError as e:  # exec failed: report like a shell would
                err.write(f"worker: cannot execute {argv[0]!r}: {e}\n".encode())
                exit_code = 127
        meta.execution_completed_timestamp.CopyFrom(now_ts())
        result = re_pb2.ActionResult(exit_code=exit_code)
        with open(out_path, "rb") as fh:
            stdout = fh.read()
        with open(err_path, "rb") as fh:
            stderr = fh.read()
        os.unlink(out_path)
        os.unlink(err_path)
        result.stdout_digest.CopyFrom(self._add(stdout))
        result.stderr_digest.CopyFrom(self._add(stderr))
        return result, code, message

    def _add(self, data: bytes) -> re_pb2.Digest:
        d = digest_of(data)
        self._pending[d.hash] = (d, data)
        return d

    def _file_digest(self, path: str) -> re_pb2.Digest:
        with open(path, "rb") as fh:
            return self._add(fh.read())

    def _directory(self, path: str, children: list) -> re_pb2.Directory:
        d = re_pb2.Directory()
        for name in sorted(os.listdir(path)):
            full = os.path.join(path, name)
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                d.symlinks.add(name=name, target=os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                sub = self._directory(full, children)
                children.append(sub)
                d.directories.add(name=name, digest=self._add(sub.SerializeToString(deterministic=True)))
            elif stat.S_ISREG(st.st_mode):
                d.files.add(name=name, digest=self._file_digest(full), is_executable=bool(st.st_mode & 0o100))
        return d

    def collect_outputs(self, command, cwd: str, result: re_pb2.ActionResult) -> None:
        new_style = bool(command.output_paths)
        paths = list(command.output_paths) or list(command.output_files) + list(command.output_directories)
        fmt = command.output_directory_format
        for p in sorted(set(paths)):
            full = os.path.join(cwd, p)
            try:
                st = os.lstat(full)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode):
                link = re_pb2.OutputSymlink(path=p, target=os.readlink(full))
                if new_style:
                    result.output_symlinks.append(link)
                if os.path.isdir(full):
                    result.output_directory_symlinks.append(link)
                else:
                    result.output_file_symlinks.append(link)
            elif stat.S_ISDIR(st.st_mode):
                children = []
                rootd = self._directory(full, children)
                tree = re_pb2.Tree(root=rootd, children=children)
                out = result.output_directories.add(path=p)
                if fmt in (re_pb2.Command.TREE_ONLY, re_pb2.Command.TREE_AND_DIRECTORY):
                    out.tree_digest.CopyFrom(self._add(tree.SerializeToString(deterministic=True)))
                if fmt in (re_pb2.Command.DIRECTORY_ONLY, re_pb2.Command.TREE_AND_DIRECTORY):
                    out.root_directory_digest.CopyFrom(self._add(rootd.SerializeToString(deterministic=True)))
            elif stat.S_ISREG(st.st_mode):
                result.output_files.add(path=p, digest=self._file_digest(full), is_executable=bool(st.st_mode & 0o100))
        self.cas.upload(self._pending)
        self._pending = {}


class Worker:
    def __init__(self, args):
        self.args = args
        self.channel = grpc.insecure_channel(
            args.target,
            options=[
                ("grpc.max_receive_message_length", 64 * 1024 * 1024),
                ("grpc.max_send_message_length", 64 * 1024 * 1024),
                # reconnect quickly after a server restart
                ("grpc.initial_reconnect_backoff_ms", 50),
                ("grpc.min_reconnect_backoff_ms", 50),
                ("grpc.max_reconnect_backoff_ms", 500),
            ],
        )
        self.bots = bots_pb2_grpc.BotsStub(self.channel)
        self.cas = Cas(self.channel, args.instance)
        self.jobs: dict[str, Job] = {}
        self.session: bots_pb2.BotSession | None = None

    def new_session_proto(self) -> bots_pb2.BotSession:
        dev = worker_pb2.Device(handle=self.args.bot_id)
        for k, v in (("OSFamily", "linux"), ("ISA", "x86-64"), ("ISA", "x86_64")):
            dev.properties.add(key=k, value=v)
        return bots_pb2.BotSession(
            bot_id=self.args.bot_id, status=bots_pb2.BotStatus.OK, worker=worker_pb2.Worker(devices=[dev])
        )

    def create_session(self) -> None:
        backoff = Backoff("CreateBotSession", max_delay=0.2)
        while True:
            try:
                # A short deadline: BuildGrid then registers the bot and returns
                # at once instead of long-polling for a lease (it does not
                # long-poll when less than 3 s would be left).
                req = bots_pb2.CreateBotSessionRequest(parent=self.args.instance, bot_session=self.new_session_proto())
                self.session = self.bots.CreateBotSession(req, timeout=3.5)
                backoff.ok()
                break
            except grpc.RpcError as e:
                backoff.fail(e)
        LOG.info("bot session %s (bot id %s)", self.session.name, self.args.bot_id)
        if self.args.ready_file:
            with open(self.args.ready_file, "w", encoding="utf-8") as fh:
                fh.write(self.session.name + "\n")
        self.absorb(self.session)

    def kill_all(self) -> None:
        for job in self.jobs.values():
            job.kill()
        self.jobs.clear()

    def absorb(self, session: bots_pb2.BotSession) -> None:
        """Start new leases; kill jobs whose lease the server dropped or cancelled."""
        seen = set()
        for lease in session.leases:
            seen.add(lease.id)
            if lease.state == bots_pb2.LeaseState.CANCELLED:
                if job := self.jobs.pop(lease.id, None):
                    LOG.info("lease %s cancelled by server", lease.id)
                    job.kill()
            elif lease.state in (bots_pb2.LeaseState.PENDING, bots_pb2.LeaseState.ACTIVE) and lease.id not in self.jobs:
                LOG.info("lease %s assigned", lease.id)
                job = Job(lease.id, lease.payload)
                self.jobs[lease.id] = job
                runner = Runner(self.cas, self.args.bot_id, self.args.work_dir)  # one per lease
                threading.Thread(target=runner.run, args=(job,), daemon=True, name=f"lease-{lease.id}").start()
        for lease_id in [i for i in self.jobs if i not in seen]:
            LOG.info("lease %s dropped by server (cancelled): killing it", lease_id)
            self.jobs.pop(lease_id).kill()

    def outgoing(self) -> tuple[bots_pb2.BotSession, list[str]]:
        s = bots_pb2.BotSession()
        s.CopyFrom(self.session)
        del s.leases[:]
        finished = []
        for job in self.jobs.values():
            lease = s.leases.add(id=job.lease_id, state=bots_pb2.LeaseState.ACTIVE)
            if job.done.is_set():
                lease.state = bots_pb2.LeaseState.COMPLETED
                lease.status.CopyFrom(job.status or status_pb2.Status(code=code_pb2.INTERNAL))
                if job.result is not None:
                    lease.result.Pack(job.result)
                finished.append(job.lease_id)
        return s, finished

    def loop(self) -> None:
        self.create_session()
        backoff = Backoff("UpdateBotSession")
        while True:
            busy = [j for j in self.jobs.values() if not j.done.is_set()]
            if busy and not any(j.done.is_set() for j in self.jobs.values()):
                # Something runs: poll to notice cancellations, or wake early when it finishes.
                busy[0].done.wait(self.args.poll)
            s, finished = self.outgoing()
            # Idle: long-poll (server answers at 80% of the deadline or when a lease arrives).
            timeout = 5.0 if s.leases and len(finished) < len(s.leases) else 20.0
            try:
                req = bots_pb2.UpdateBotSessionRequest(name=s.name, bot_session=s)
                resp = self.bots.UpdateBotSession(req, timeout=timeout)
                backoff.ok()
            except grpc.RpcError as e:
                if e.code() in RETRYABLE:
                    backoff.fail(e)
                    continue
                LOG.warning("UpdateBotSession: %s (%s): new session", e.code().name, e.details())
                self.kill_all()
                self.create_session()
                continue
            for lease_id in finished:
                self.jobs.pop(lease_id, None)
            self.session = resp
            self.absorb(resp)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="127.0.0.1:50051")
    ap.add_argument("--instance", default="")
    ap.add_argument("--bot-id", required=True, help="stable id: the same worker slot keeps the same id")
    ap.add_argument("--work-dir", default=None)
    ap.add_argument("--ready-file", default=None)
    ap.add_argument("--poll", type=float, default=0.05, help="UpdateBotSession period while a lease runs (s)")
    args = ap.parse_args()
    logging.basicConfig(
        level=os.environ.get("VERTER_WORKER_LOG", "INFO"),
        format=f"%(asctime)s {args.bot_id} %(levelname)s %(message)s",
    )
    args.work_dir = args.work_dir or tempfile.mkdtemp(prefix=f"{args.bot_id}-")
    os.makedirs(args.work_dir, exist_ok=True)
    worker = Worker(args)

    def on_term(signum, _frame):
        LOG.info("signal %d: killing running commands and exiting", signum)
        for job in list(worker.jobs.values()):
            job.kill()
        logging.shutdown()
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    worker.loop()


if __name__ == "__main__":
    sys.exit(main())
