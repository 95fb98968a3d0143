"""Allow `python -m haiku_cli`."""

from haiku_cli.cli.app import main

main()
