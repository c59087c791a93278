"""`deepsearch mcp`: research as a Model Context Protocol tool, on the official `mcp`
SDK (imported only here, when the command runs).

tool.py is the `research` tool without the SDK (schemas, argument validation, the
settings of a call, the result); app.py is the SDK's server around it (progress,
cancellation, stdio and streamable HTTP); tasks.py runs a call as an MCP task (on
task_store.py, docs/mcp.md). May import deepsearch.session, library,
server (serve's auth check and failure rule) and frontend (the option table, the
live view's step line); never the CLI's commands.
"""
