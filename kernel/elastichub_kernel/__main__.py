"""``python -m elastichub_kernel install|uninstall ...`` (see install.py)."""

import sys

from .install import main

if __name__ == "__main__":
    sys.exit(main())
