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
