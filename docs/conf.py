# Sphinx configuration for the ElasticHub docs (MyST Markdown).
project = "ElasticHub"
author = "ElasticHub Contributors"
copyright = "2026, ElasticHub Contributors"
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "_ext"))
extensions = ["myst_parser", "traitsdoc"]
source_suffix = {".md": "markdown"}
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
exclude_patterns = ["_build"]
html_theme = "pydata_sphinx_theme"
html_title = "ElasticHub"
html_theme_options = {"navigation_depth": 2, "show_toc_level": 2}
html_static_path = ["_static"]
