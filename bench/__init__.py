"""Benchmarks: `make bench` runs them all and writes BENCHMARKS.md.

Each benchmark module in `BENCHMARKS` exposes `run() -> str`, returning a markdown
section (it must include the command that reproduces it). Results are kept per
module in bench/results/<name>.md so one benchmark can be re-run alone
(`python -m bench NAME`) and the report reassembled.
"""
