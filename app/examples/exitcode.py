"""Example app: copies ``in`` to ``out`` after --sleep seconds, then exits with --exit."""

import argparse
import shutil
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--sleep", type=float, default=0)
parser.add_argument("--exit", type=int, default=0)
parser.add_argument("--no-output", action="store_true")
opts = parser.parse_args()
time.sleep(opts.sleep)
if not opts.no_output:
    shutil.copyfile("in", "out")
print(f"exitcode: exiting with {opts.exit}", file=sys.stderr)
sys.exit(opts.exit)
