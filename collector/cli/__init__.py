"""The ``ragpulse`` command line: :mod:`.main` builds the parser; one module per subcommand."""
