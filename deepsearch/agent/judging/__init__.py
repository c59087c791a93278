"""Judging answers, the rules: the multi-metric evaluator's checks, reply schemas and
verdicts (`evaluator`), honest not-found answers (`honesty`), the run's confidence
figure (`confidence`), what counts as an answer (`content`) and high effort's
re-check's limits and replies (`recheck`).

May import `deepsearch.text`, `deepsearch.web.urls` and the vocabulary; never
citations, the loop, the state, an LLM client or a prompt (import contracts in
pyproject.toml, checked by `make lint`). The LLM calls and the state they read and
write are the loop's steps of the same names (agent/steps/).
"""
