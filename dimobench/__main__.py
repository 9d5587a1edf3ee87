"""Run the CLI with ``python -m dimobench``."""

from dimobench.cli.app import main

main()
