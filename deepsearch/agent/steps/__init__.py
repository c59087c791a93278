"""The loop's own steps: the LLM passes and state changes the loop runs around the
model's actions (the actions it chooses are `actions/`). Each applies a toolkit
module's plain rules, of the same name, to the run:

- `evaluator`: the Evaluator's calls (classify, the checks, error analysis); which
  checks, their replies and verdicts: `judging/evaluator.py`;
- `honesty`: the answer a run reports, its search record and confidence, from the
  state into the result; the rules: `judging/honesty.py`;
- `recheck`: high effort's re-check, its queries, verdict and a contradiction recorded
  (run by `hooks.RecheckHook`); the limits and replies: `judging/recheck.py`;
- `finalize`: the editor pass and references from what the run read; markdown repair
  and anchoring: `citations/finalize.py`;
- `rewrite`: the query rewriter that fills the search action's seam; its reply:
  `retrieval/rewrite.py`.

They may import the loop's shared modules (state, deps, context, wording, result), the
toolkit, the LLM client and `prompts`; the toolkit never imports them (import
contracts in pyproject.toml, checked by `make lint`).
"""
