"""The orchestrator's URL settings (hub_api_url, proxy_url, service_url),
checked at start-up rather than when first used."""

from __future__ import annotations

from urllib.parse import urlparse

URL_ENV = {"hub_api_url": "JUPYTERHUB_API_URL", "proxy_url": "ELASTICHUB_PROXY_URL",
           "service_url": "JUPYTERHUB_SERVICE_URL"}  # where each one's default comes from


def url_problem(name: str, value: str) -> str | None:
    """Why a URL setting cannot be used, or None. Checked at start, not when
    first used: a port out of range was a traceback once the hub and the
    cluster answered, and "hub:10101" (no scheme) served on port 80."""
    if name == "service_url" and not value:
        return None  # no web server
    url = urlparse(value)
    try:
        url.port
    except ValueError as e:
        return f"ElasticOrchestrator.{name}: {value!r}: {e}"
    if url.scheme not in ("http", "https") or not url.hostname:
        return f"ElasticOrchestrator.{name}: {value!r} is not an http(s) URL with a host (e.g. http://127.0.0.1:10101)"
    return None
