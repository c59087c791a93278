"""`deepsearch eval`: benchmark questions run through the research loop, graded, summarized.

dataset (questions, ids, shards) -> runner (concurrent ResearchRuns, cassettes,
answer-key sites blocked) -> results (results.jsonl, resumable) -> grading (exact or
SimpleQA's rubric) -> summary (summary.json and the table).
"""
