"""`deepsearch serve`: an OpenAI-compatible chat-completions server over the research loop.

This package owns the HTTP side only: the request model and its knobs (`request`), the
OpenAI-shaped bodies, chunks and errors (`shapes`), the research steps as reasoning
text (`reasoning`), one request's run with its cancellation (`research`) and the
Starlette app with auth, the concurrency limit and the request log (`app`).

It may import `deepsearch.agent`, `deepsearch.runtime` (every run is built through the
same code path as the CLI's, so budget, steps and timeout are enforced identically) and
what the front ends share (`deepsearch.frontend`), never the CLI's `deepsearch.commands`.
Nothing imports it but the serve command (and `mcp`'s HTTP transport, which mounts its
app), and that only when the server starts (Starlette and uvicorn load lazily).
"""
