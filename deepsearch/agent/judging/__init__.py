"""Judging answers: the multi-metric evaluator (`evaluator`), honest not-found answers
(`honesty`) and the run's confidence figure (`confidence`).

May import `deepsearch.text`, `deepsearch.web.urls` and the vocabulary; never
citations or the loop. `evaluator` and `honesty`, loop steps, still take the
state (and the LLM client, the prompt's context, the result): exceptions named in
pyproject.toml's import contracts, which `make lint` checks.
"""
