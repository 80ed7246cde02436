"""The test helpers' own contract: a wait for "pod removed" passes only when
the pod is gone, never because the store failed."""

import pytest

from elastichub.localcluster.store import ApiError, not_found

from lc_clustertools import phase


class _Store:
    def __init__(self, outcome):
        self.outcome = outcome

    def get(self, kind, name, namespace=None):
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


def test_phase_of_a_pod_and_of_a_removed_one():
    assert phase(_Store({"status": {"phase": "Running"}}), "p") == "Running"
    assert phase(_Store({"metadata": {}}), "p") is None  # no status yet
    assert phase(_Store(not_found("pods", "p")), "p") is None


@pytest.mark.parametrize("error", [RuntimeError("store closed"), KeyError("pods"),
                                   ApiError(500, "InternalError", "boom")])
def test_phase_does_not_read_a_store_error_as_a_removed_pod(error):
    with pytest.raises(type(error)):
        phase(_Store(error), "p")
