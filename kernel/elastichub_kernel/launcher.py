"""``python -m elastichub_kernel.launcher -f {connection_file}`` (kernelspec argv).

``python -m`` puts the kernel's working directory (the notebook's folder)
first on ``sys.path``: a student's ``queue.py`` or ``secrets.py`` there
would be imported by ipykernel and by this kernel instead of the standard
library's. It is taken off before anything is imported, as
``ipykernel_launcher`` does; IPython adds ``''`` back after the standard
library (before site-packages) for the notebook's own imports.
"""

import os
import sys

if __name__ == "__main__" and sys.path and (
        sys.path[0] == "" or os.path.realpath(sys.path[0]) == os.path.realpath(os.getcwd())):
    del sys.path[0]

from ipykernel.kernelapp import IPKernelApp  # noqa: E402

from . import ownimports  # noqa: E402
from .kernel import ElasticKernel  # noqa: E402

# The kernel's own path for what it loads late, taken before IPython adds the notebook's folder ('').
ownimports.kernel_path()


def main() -> None:
    IPKernelApp.launch_instance(kernel_class=ElasticKernel)


if __name__ == "__main__":
    main()
