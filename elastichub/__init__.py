"""ElasticHub: an elastic JupyterHub on hybrid clouds."""

__version__ = "0.1.0"
