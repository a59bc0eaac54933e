"""Smoke check of a running fixture: one real Execute, then a cache hit.

Run with the fixture venv after `start`:
    target/buildgrid/venv/bin/python .ci/buildgrid/smoke.py
Reads VERTER_REMOTE_URL / VERTER_REMOTE_INSTANCE (env or target/buildgrid/env).
"""

import sys
import time
import uuid

from rexec import Client


def main() -> int:
    c = Client()
    salt = str(uuid.uuid4())  # a fresh action each run: the first Execute really runs
    action, ad = c.make_action(["sh", "-c", "echo hi > out.txt; echo hi"], outputs=["out.txt"], salt=salt)

    assert c.get_action_result(ad) is None, "fresh action already cached?"
    t = time.perf_counter()
    resp = c.execute(ad)
    t_exec = time.perf_counter() - t
    r = resp.result
    assert resp.status.code == 0, resp.status
    assert not resp.cached_result, "first Execute must not be a cache hit"
    assert r.exit_code == 0, r
    assert c.read(r.stdout_digest) == b"hi\n", c.read(r.stdout_digest)
    files = {f.path: f for f in r.output_files}
    assert "out.txt" in files, r
    assert c.read(files["out.txt"].digest) == b"hi\n"
    print(f"execute: exit 0, out.txt == 'hi\\n', worker {r.execution_metadata.worker!r}, {t_exec * 1000:.0f} ms")

    t = time.perf_counter()
    cached = c.get_action_result(ad)
    t_ac = time.perf_counter() - t
    assert cached is not None, "GetActionResult: no entry after a successful Execute"
    assert {f.path for f in cached.output_files} == {"out.txt"}
    print(f"GetActionResult: hit, {t_ac * 1000:.1f} ms")

    t = time.perf_counter()
    again = c.execute(ad)
    t_again = time.perf_counter() - t
    assert again.cached_result, "second Execute should be answered from the action cache"
    print(f"execute again: cached_result=True, {t_again * 1000:.1f} ms")
    print("smoke: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
