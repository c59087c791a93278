"""The code sandbox: runs small untrusted Python snippets in an isolated child process.

`runner` starts the child with the strongest isolation this machine offers
(`isolation`: namespaces, rlimits, an unprivileged user) and refuses when none
exists; `child` is the program run inside it (standard library only, audit hook).
A service the agent uses through `Sandbox` (timed by an injected `deepsearch.clock.Clock`);
it imports nothing from `deepsearch.agent`.
"""
