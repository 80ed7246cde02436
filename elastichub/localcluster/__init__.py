"""A local Kubernetes cluster on one machine: test and demo infrastructure.

Production code never imports this package (import-linter contract).
"""
