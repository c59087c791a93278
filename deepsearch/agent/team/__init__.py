"""Team mode: a research planner splits a question into independent sub-problems, each
researched concurrently by a child run within a token share decided before it starts;
the parent continues with the children's answers and reading in its knowledge.

Modules: `plan` (the research_planner call), `budget` (shares and the child's tracker),
`children` (a child's deps and options), `merge` (children into the parent's state),
`mode` (the hook the loop calls), `report` (the `team` entries of --json). Only team
mode lives here: what the effort presets switch off is the gate's (agent/gating.py),
high effort's re-check is judging's and the loop's (agent/judging/recheck.py,
agent/steps/recheck.py, agent/hooks.py).
"""
