"""Entry point of the frozen app: the same ``captioner`` command line as the pip install."""

import multiprocessing
import sys

from captioner.cli import main

if __name__ == "__main__":
    multiprocessing.freeze_support()
    sys.exit(main())
