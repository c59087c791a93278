"""One handler per action. Each takes (payload, ctx: agent.step.StepContext) and returns
an `Outcome` (agent/outcomes.py) whose `detail` is the step log's line; none of them
raises for outside failures. agent/dispatch.py picks the handler for a payload."""
