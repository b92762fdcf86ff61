"""The `maitred` command line: a thin adapter over the library (no logic of its own)."""
