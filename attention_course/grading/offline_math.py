"""Maths that renders without a network, on formgrader's pages and the feedback pages.

nbgrader's `formgrade` and `feedback` templates load MathJax from a CDN (nbconvert's `mathjax`
macro). The course replaces that macro (`templates/offline/base/mathjax.html.j2`, found before
nbconvert's through `HTMLExporter.extra_template_basedirs` in nbgrader_config.py) with MathJax 3's
single-file TeX-to-SVG build and its `ui/safe` extension embedded in the page. The files come
from a pinned package (`django-static-mathjax`, requirements.txt); SVG output needs no web
fonts, so a page opened from disk, in formgrader or behind a proxy renders its maths with
nothing fetched.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

import nbgrader.server_extensions.formgrader as _formgrader

# TeX to SVG, then MathJax's `ui/safe` extension (as nbconvert's CDN MathJax loads `Safe`): no
# `javascript:` links or styles from TeX in a student's markdown.
SCRIPTS = ("mathjax", ["static/mathjax/es5/tex-svg.js", "static/mathjax/es5/ui/safe.js"])
OFFLINE_TEMPLATES = Path(__file__).with_name("templates") / "offline"
# Ours first, then nbgrader's own (its `formgrade` and `feedback` templates): setting the list in
# the config replaces the one nbgrader would set.
TEMPLATE_BASEDIRS = [str(OFFLINE_TEMPLATES), str(Path(_formgrader.__file__).parent / "templates")]


@functools.cache
def _script() -> str:
    package, names = SCRIPTS
    text = "\n".join(resources.files(package).joinpath(name).read_text(encoding="utf-8") for name in names)
    return text.replace("</script", "<\\/script")  # nothing in it may close the page's script tag


def mathjax_source(_unused="") -> str:
    """The MathJax script to embed (a Jinja filter: `{{ "" | mathjax_source }}`)."""
    return _script()
