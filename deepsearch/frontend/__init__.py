"""What the four front ends (the CLI's commands, the library, `serve`, `mcp`) share,
below all of them, so that none imports another's code:

* `options`: the research options table (names, kinds, help, configuration keys), the
  configuration overrides of a set of options and the cassette choice;
* `output`: output cleaning (no control characters from pages, `file://` URLs as paths);
* `live`: the live view of a run's events (the CLI draws it on stderr; MCP renders its
  step lines as progress messages); `units`: numbers for people (212k tokens, 4.2 MB).

The CLI renders the table as Typer options (commands/research_options.py); an import
contract (pyproject.toml, `front-ends-apart`) keeps the CLI out of the other front ends.
"""
