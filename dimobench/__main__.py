"""Run the CLI with ``python -m dimobench``."""

import sys
from pathlib import Path

# ``-m`` put the working directory first on sys.path, where a stray matplotlib.py would shadow the real package
# for the whole run; it goes last instead (modules there stay importable)
if sys.path and sys.path[0] in ("", str(Path.cwd())):
    sys.path.append(sys.path.pop(0))

from dimobench.cli.app import main  # noqa: E402

main()
