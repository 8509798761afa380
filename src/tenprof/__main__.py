"""`python -m tenprof ...` is the same as the `tenprof` command."""

from tenprof.cli.main import entry_point

entry_point()
