"""Sphinx directive listing a traitlets class's configurable traits from the
class itself (never a hand-copied list)::

    ```{traits} elastichub.orchestrator.app.ElasticOrchestrator
    ```

Each trait: its `c.Class.name` line, type and default, and its help string.
"""

from __future__ import annotations

import importlib
import inspect

from docutils import nodes
from docutils.parsers.rst import Directive


def _default(trait) -> str:
    try:
        value = trait.default_value_repr()
    except Exception:
        value = repr(trait.default_value)
    return value if len(value) < 80 else value[:77] + "..."


class TraitsDirective(Directive):
    required_arguments = 1
    has_content = False

    def run(self):
        module_name, _, class_name = self.arguments[0].rpartition(".")
        cls = getattr(importlib.import_module(module_name), class_name)
        listing = nodes.definition_list()
        for name, trait in sorted(cls.class_own_traits(config=True).items()):
            term = nodes.term()
            term += nodes.literal(text=f"c.{cls.__name__}.{name}")
            term += nodes.Text(f"  ({type(trait).__name__}, default {_default(trait)})")
            body = nodes.definition()
            for para in inspect.cleandoc(trait.help or "(no help)").split("\n\n"):
                body += nodes.paragraph(text=" ".join(para.split()))
            listing += nodes.definition_list_item("", term, body)
        return [listing]


def setup(app):
    app.add_directive("traits", TraitsDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
