"""The release number, in a module of its own: the trace and cassette headers record it
without importing the package's public face (`deepsearch/__init__`, which names the
library and so sits above them); `deepsearch.__version__` is this value."""

__version__ = "0.1.0"
