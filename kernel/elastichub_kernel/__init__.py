"""Elastic Python: an IPython kernel that checkpoints and restores its state.

Importing this package imports no user library (numpy, pandas, ...): keep it
that way, the kernel's start time depends on it.
"""

__version__ = "0.1.0"
