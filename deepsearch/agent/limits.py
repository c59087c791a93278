"""The limits the model is told about, in one table.

Each number here feeds both a schema (`max_length` and the field's description)
and the prompt templates that state it, so what the prompt promises and what the
validator enforces cannot disagree. A limit the model never reads (how much
context is shown, retry counts) stays next to the code that applies it.
"""

from __future__ import annotations

MAX_QUERIES = 5  # web queries per search step
MAX_VISITS = 5  # URL indices per visit step
MAX_SUBQUESTIONS = 2  # sub-questions per reflect step
MAX_REWRITES = 5  # follow-up queries per query-rewriter reply
# Longest strings a step may hold, told in the schema only (not a MAX_ the prompts
# state): a grammar enforces them on servers that build one from the schema (a weak
# model's runaway string ends there), strict mode reads them in the description, and
# the validator trims a longer one.
LONGEST_QUERY = 200  # one web query
LONGEST_QUESTION = 400  # one sub-question
LONGEST_PROBLEM = 2000  # a coding problem statement
LONGEST_ANSWER = 6000  # an answer, in markdown (~1,500 tokens: within the agent's cap)
