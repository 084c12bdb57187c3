"""Example app: upper-cases the input file ``in`` into ``out``."""

import sys

with open("in", "rb") as src, open("out", "wb") as dst:
    while chunk := src.read(1 << 20):
        dst.write(chunk.upper())
print("uppercase: done")
sys.exit(0)
