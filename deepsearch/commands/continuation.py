"""`-c` / `--continue [RUN_ID]`: a switch with an optional value, which click cannot
parse beside a question of unquoted words (`deepsearch -c and when did it close`
would take "and" for the run). So the command line is rewritten before parsing:
`-c` or `--continue` followed by a run id (`20261204-224530-3fa9c1`) names that run;
followed by anything else, or nothing, it means the last run (`--continue=last`).
`--continue=PREFIX` names a run by a unique prefix of its id.
"""

from __future__ import annotations

import re

LAST = "last"
FLAGS = ("-c", "--continue")
RUN_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")


def expand_continue(args: list[str]) -> list[str]:
    """`args` with every bare `-c` / `--continue` given its value (see the module)."""
    out: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return out + args[index:]
        if arg in FLAGS:
            following = args[index + 1] if index + 1 < len(args) else ""
            if RUN_ID.fullmatch(following):
                out.append(f"--continue={following}")
                index += 2
                continue
            arg = f"--continue={LAST}"
        out.append(arg)
        index += 1
    return out
