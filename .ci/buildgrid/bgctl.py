"""Small helpers for the BuildGrid fixture scripts (run with the fixture venv).

  bgctl.py free-port                         print a free TCP port on 127.0.0.1
  bgctl.py port-in-use PORT                  exit 0 if 127.0.0.1:PORT accepts connections
  bgctl.py render TEMPLATE OUT K=V...        ${K} substitution (string.Template)
  bgctl.py wait-server TARGET INSTANCE SECS [PID]
                                             wait until GetCapabilities answers
                                             (fail early if process PID exits)
  bgctl.py wait-files N SECS FILE...         wait until N of the files exist
"""

import os
import socket
import string
import sys
import time


def free_port() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        print(s.getsockname()[1])


def port_in_use(port: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        sys.exit(0 if s.connect_ex(("127.0.0.1", int(port))) == 0 else 1)


def render(template: str, out: str, *pairs: str) -> None:
    values = dict(p.split("=", 1) for p in pairs)
    with open(template, encoding="utf-8") as f:
        text = string.Template(f.read()).substitute(values)
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)


def wait_server(target: str, instance: str, secs: str, pid: str = "") -> None:
    import grpc

    from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
    from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc

    deadline = time.monotonic() + float(secs)
    last = None
    # Short reconnect backoff: the default (1 s, growing) would add seconds
    # after the first "connection refused".
    opts = [
        ("grpc.initial_reconnect_backoff_ms", 50),
        ("grpc.min_reconnect_backoff_ms", 50),
        ("grpc.max_reconnect_backoff_ms", 100),
    ]
    with grpc.insecure_channel(target, options=opts) as channel:
        stub = re_grpc.CapabilitiesStub(channel)
        while time.monotonic() < deadline:
            if pid and not os.path.exists(f"/proc/{pid}"):
                print(f"server process {pid} exited", file=sys.stderr)
                sys.exit(1)
            try:
                caps = stub.GetCapabilities(re_pb2.GetCapabilitiesRequest(instance_name=instance), timeout=2)
                if caps.execution_capabilities.exec_enabled:
                    return
                last = "exec_enabled is false"
            except grpc.RpcError as e:  # not up yet
                last = f"{e.code().name}: {e.details()}"
            time.sleep(0.05)
    print(f"server at {target} did not answer GetCapabilities in {secs}s: {last}", file=sys.stderr)
    sys.exit(1)


def wait_files(n: str, secs: str, *files: str) -> None:
    deadline = time.monotonic() + float(secs)
    while time.monotonic() < deadline:
        if sum(os.path.exists(f) for f in files) >= int(n):
            return
        time.sleep(0.05)
    missing = [f for f in files if not os.path.exists(f)]
    print(f"timed out after {secs}s waiting for: {' '.join(missing)}", file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
    cmds = {
        "free-port": free_port,
        "port-in-use": port_in_use,
        "render": render,
        "wait-server": wait_server,
        "wait-files": wait_files,
    }
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    cmds[sys.argv[1]](*sys.argv[2:])
