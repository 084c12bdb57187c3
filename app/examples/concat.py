"""Example app: ``out`` = (a + sep + b) repeated; ``count`` = number of repetitions."""

import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--sep", default="")
parser.add_argument("--repeat", type=int, default=1)
opts = parser.parse_args()
with open("a", "rb") as fa, open("b", "rb") as fb:
    a, b = fa.read(), fb.read()
with open("out", "wb") as out:
    for _ in range(opts.repeat):
        out.write(a + opts.sep.encode() + b)
with open("count", "w") as count:
    count.write(f"{opts.repeat}\n")
print(f"concat: wrote {opts.repeat} repetitions")
