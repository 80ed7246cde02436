"""A local Kubernetes cluster on one machine: test and demo infrastructure.

The API server (apiserver, store, selectors, patch, validation, tables)
speaks the Kubernetes wire protocol; the controllers run in the same event
loop: the scheduler (scheduler), one kubelet per node running pods as local
processes (kubelet, procs), a pool of cloud VMs behind a libcloud driver
(cloud), tied together by `cluster.LocalCluster` and the `elastichub
localcluster` command (cli). See docs/localcluster.md.

Production code never imports this package (import-linter contract), and
importing it stays cheap: the submodules are imported where used.
"""
