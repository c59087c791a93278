"""Judging answers: the multi-metric evaluator (`evaluator`), honest not-found answers
(`honesty`) and the run's confidence figure (`confidence`).

May import `deepsearch.llm` plain types, `agent.state` and `agent.result`; never the loop.
"""
