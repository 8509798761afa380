"""The `tenprof` command: one module per subcommand, each a class with `prepare_parser` and `run`."""
