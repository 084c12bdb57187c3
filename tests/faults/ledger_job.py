"""A job that records every run of itself in a ledger directory outside its sandbox.

``ledger_job.py LEDGER JOB SLEEP``: creates ``JOB.PID.start`` (O_EXCL) first, sleeps, writes
the output ``out`` (``JOB PID MD5(in) MD5(shared)``) and then ``JOB.PID.end``. If another
run of the same job is still alive when it starts, it also leaves ``JOB.PID.overlap``
naming it: two live runs of one job are a duplicate execution.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time


def _alive_run(pid: int, job: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
    except OSError:
        return False
    return job.encode() in argv and any(a.endswith(b"ledger_job.py") for a in argv)


def _md5(path: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.md5(fh.read()).hexdigest()


def _excl(path: str, text: str) -> None:
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def main() -> None:
    ledger, job, sleep = sys.argv[1], sys.argv[2], float(sys.argv[3])
    pid = os.getpid()
    for name in os.listdir(ledger):
        parts = name.split(".")
        if len(parts) == 3 and parts[0] == job and parts[2] == "start":
            other = int(parts[1])
            if other != pid and _alive_run(other, job):
                _excl(os.path.join(ledger, f"{job}.{pid}.overlap"), str(other))
    _excl(os.path.join(ledger, f"{job}.{pid}.start"), repr(time.time()))
    time.sleep(sleep)
    with open("out", "w") as fh:
        fh.write(f"{job} {pid} {_md5('in')} {_md5('shared')}\n")
    _excl(os.path.join(ledger, f"{job}.{pid}.end"), repr(time.time()))


if __name__ == "__main__":
    main()
