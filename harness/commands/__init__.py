"""One module per `lorabench` subcommand; each defines `register(subparsers)`."""
