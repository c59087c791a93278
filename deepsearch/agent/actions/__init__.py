"""One handler per action. Each takes (payload, state, deps, options) and returns a
short detail line for the step record; none of them raises for outside failures."""
