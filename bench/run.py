"""Run the benchmarks: ``python -m bench.run [--quick] [--engines sqlite,postgres] [NAME ...]``.

Writes ``bench/results/<UTC time>.json`` and ``.md``; a run of every scenario also refreshes
``bench/results/latest.md``.
Everything runs on loopback and is bounded in time; ``--quick`` shrinks the sizes for a
smoke run (its results are marked and not comparable with full runs).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from bench.scenarios import SCENARIOS, workdir

RESULTS = Path(__file__).resolve().parent / "results"

QUICK: dict[str, dict[str, Any]] = {
    "submit_10k": {"runs": 1, "n": 1000},
    "upload": {"sizes_mib": (16, 64), "runs": 1},
    "status": {"sizes": (1000, 5000), "runs": 3},
    "read_load": {"seconds": 3},
    "local_backend": {"n": 100},
    "gahp": {"n": 100},
    "gahp_query_batch": {"n": 1000, "runs": 1},
    "boinc_backend": {"n": 1000, "finish": 100},
}


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    return {
        "cores": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "cpu": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "kernel": platform.release(),
        "commit": commit,
    }


def to_markdown(record: dict[str, Any]) -> str:
    """A readable table per scenario."""
    m = record["machine"]
    lines = [
        f"# Benchmarks {record['started']}{' (quick)' if record['quick'] else ''}",
        "",
        f"Machine: {m['cores']} cores, {m['memory_gib']} GiB, {m['cpu']}, Python {m['python']}, "
        f"commit {m['commit']}.",
        "",
    ]
    for name, results in record["scenarios"].items():
        lines += [f"## {name}", ""]
        for res in results:
            flat = _flatten(res)
            if not lines[-1].startswith("|"):
                lines += ["| " + " | ".join(flat) + " |", "|" + "---|" * len(flat)]
            lines.append("| " + " | ".join(str(v) for v in flat.values()) + " |")
        lines.append("")
    return "\n".join(lines)


def _flatten(res: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in res.items():
        if isinstance(v, list) and v and isinstance(v[0], dict):
            for i, item in enumerate(v):
                for k2, v2 in item.items():
                    out[f"{k}[{i}].{k2}"] = v2
        elif not isinstance(v, list):
            out[k] = v
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the chosen scenarios on the chosen engines and record the results."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("names", nargs="*", choices=[[], *SCENARIOS], default=[])
    p.add_argument("--engines", default="sqlite,postgres")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--resume", type=Path, help="add to this record (same machine and commit)")
    args = p.parse_args(argv)
    names = args.names or list(SCENARIOS)
    if args.resume:
        record: dict[str, Any] = json.loads(args.resume.read_text())
    else:
        record = {
            "started": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "quick": args.quick,
            "machine": machine(),
            "scenarios": {},
        }
    RESULTS.mkdir(exist_ok=True)
    stamp = record["started"].replace(":", "")
    suffix = "-quick" if record["quick"] else ""
    for name in names:
        for engine in args.engines.split(","):
            work = workdir()
            t0 = time.perf_counter()
            try:
                res = SCENARIOS[name](engine, work, **(QUICK[name] if args.quick else {}))
            finally:
                shutil.rmtree(work, ignore_errors=True)
            res["wall_seconds"] = round(time.perf_counter() - t0, 1)
            runs = record["scenarios"].setdefault(name, [])
            runs[:] = [r for r in runs if r.get("engine") != engine] + [res]
            print(f"{name} [{engine}]: {json.dumps(res)}", file=sys.stderr)
            # Written after every scenario: an interrupted run keeps what it measured.
            (RESULTS / f"{stamp}{suffix}.json").write_text(json.dumps(record, indent=2) + "\n")
    md = to_markdown(record)
    (RESULTS / f"{stamp}{suffix}.md").write_text(md + "\n")
    if not record["quick"] and set(record["scenarios"]) == set(SCENARIOS):
        # Only a record of every scenario is "latest"; a partial run keeps its own files.
        (RESULTS / "latest.md").write_text(md + "\n")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
