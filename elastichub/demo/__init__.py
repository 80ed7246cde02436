"""`elastichub demo`: the whole system on one machine (see cli.py)."""
