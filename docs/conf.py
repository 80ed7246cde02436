# Sphinx configuration for the ElasticHub docs (MyST Markdown).
project = "ElasticHub"
author = "ElasticHub Contributors"
copyright = "2026, ElasticHub Contributors"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path = ["_static"]
