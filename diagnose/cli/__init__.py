"""The `vdiag` command: parse arguments, call the library, render, exit with a documented code."""
