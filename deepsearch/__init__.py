"""deepsearch: a command-line research agent that hunts down one correct, cited answer."""

__version__ = "0.1.0"

__all__ = ["__version__"]
