"""Helpers of the ElasticSpawner tests without a cluster."""

from __future__ import annotations

from traitlets.config import Config

from elastichub.spawner import ElasticSpawner


def spawner(**settings) -> ElasticSpawner:
    c = Config()
    for key, value in settings.items():
        setattr(c.ElasticSpawner, key, value)
    return ElasticSpawner(config=c, _mock=True)


def said(err, words: str) -> str:
    """The hub's answer to a refused start: one line, ElasticHub's prefix, `words` in it."""
    message = err.value.log_message % err.value.args
    assert message.startswith("Bad ElasticHub configuration: ") and words in message and "\n" not in message, message
    # The user reads it too, and can do nothing about it but tell those who can.
    shown = err.value.jupyterhub_message
    assert shown.startswith(message) and shown.endswith("tell the course staff, and show them this message."), shown
    return message
