"""ElasticSpawner under settings a university hub's own config carries
(zero-to-jupyterhub style): each is honoured, or refused at the start in one
line that names it (not a traceback, not a failure later, mid-move)."""

from __future__ import annotations

import pytest
from tornado import web

from spawnertools import said, spawner


async def test_internal_ssl_is_refused_at_the_start_naming_the_setting():
    """The checkpoint before a stop and the orchestrator's calls do not present the hub's
    internal certificates: every stop would go ahead with a failed checkpoint."""
    s = spawner()
    s.internal_ssl = True  # not a setting of the spawner's: the hub passes its own when it builds one
    with pytest.raises(web.HTTPError) as err:
        s.start()
    said(err, "JupyterHub.internal_ssl")
