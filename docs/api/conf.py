"""Sphinx configuration of the API reference (built by `make docs`, checked by `make lint`)."""

project = "dpreg"
author = "dpreg contributors"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax"]
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autodoc_typehints = "none"
autodoc_member_order = "bysource"
suppress_warnings = ["ref.python"]
html_theme = "alabaster"
exclude_patterns = ["_build"]
napoleon_use_ivar = True
