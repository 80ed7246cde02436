"""Elastic Python: an IPython kernel that checkpoints and restores its state.

Importing this package imports no user library (numpy, pandas, ...): keep it
that way, the kernel's start time depends on it.
"""

__version__ = "0.1.0"

# Control-channel messages the kernel answers and the server extension sends
# (the kernel handles each in a method of the same name).
CHECKPOINT_REQUEST = "elastichub_checkpoint_request"
STATUS_REQUEST = "elastichub_status_request"
LIVE_REQUEST = "elastichub_live_request"
SESSION_REQUEST = "elastichub_session_request"
