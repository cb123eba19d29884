"""What a page asks the reader's browser to fetch, and the markup around it (part of the book's
Sphinx extension).

- Code is highlighted without a `<span>` around the tokens that both of the theme's Pygments
  styles (light and dark) draw exactly like plain code: names, punctuation and spaces were
  most of a chapter's HTML (chapter 12: 530 of 753 kB were its folded code cells), for no
  colour a reader sees. `_static/scratchformer.css` gives a code block the styles' plain
  colour, so the unwrapped text looks as the spans did.
- Each figure's `<img>` gets its width and height (the page does not jump when it arrives),
  `loading="lazy"` (the browser fetches it when the reader scrolls near it) and
  `decoding="async"`.
- MathJax is loaded as the components that render the book's formulas (TeX in, HTML and CSS
  out, MathML for screen readers; the rest of TeX is loaded on demand by `autoload`), not
  the combined file, which adds MathML input and the contextual menu (1.17 MB against
  0.76 MB). Sphinx includes it only on pages with a formula.
- MyST-NB's "Show code cell source" summary is named by its visible words, not by an
  `aria-label` that hides them ("Toggle hidden content": axe-core's
  label-content-name-mismatch).

The theme's own markup is changed by the templates in `_templates/`, each saying why.
"""

from __future__ import annotations

import re
from html import escape
from pathlib import Path
from typing import Any

import imagesize
from pygments.formatters import HtmlFormatter
from pygments.styles import get_style_by_name
from pygments.token import STANDARD_TYPES, Text, Token, _TokenType
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxTranslator

logger = logging.getLogger(__name__)

# MathJax 3 components (paths under es5/) that typeset the book's formulas; `startup.js` loads
# them and what they need (`core`, the TeX font's data, the woff files of the fonts used).
MATHJAX_STARTUP = "startup.js"
MATHJAX_COMPONENTS = ["input/tex", "output/chtml", "a11y/assistive-mml"]


def plain_token_types(style_names: list[str]) -> set[_TokenType]:
    """The standard token types that every one of these Pygments styles draws exactly like
    plain text (same colour, background, weight, slant, underline, border). A style's text
    colour is the colour of the whole block (`.highlight` in the theme's pygments.css)."""
    styles = [get_style_by_name(name) for name in style_names]
    return {ttype for ttype in STANDARD_TYPES
            if ttype is not Token and all(style.style_for_token(ttype) == style.style_for_token(Text)
                                          for style in styles)}


def plain_token_formatter(plain: set[_TokenType]) -> type[HtmlFormatter]:
    """An HtmlFormatter that writes the tokens of the `plain` types as bare text."""

    class PlainTokensHtmlFormatter(HtmlFormatter):
        def _get_css_classes(self, ttype: _TokenType) -> str:
            return "" if ttype in plain else super()._get_css_classes(ttype)

    return PlainTokensHtmlFormatter


def theme_pygments_styles(app: Sphinx) -> list[str]:
    """The Pygments styles of the theme's light and dark modes (pydata-sphinx-theme's options)."""
    options = app.builder.theme.get_options(app.config.html_theme_options)
    return [options[key] for key in ("pygments_light_style", "pygments_dark_style") if options.get(key)]


def lighter_highlighting(app: Sphinx) -> None:
    """Give the HTML builder's highlighter the formatter that leaves plain tokens unwrapped."""
    if getattr(app.builder, "format", "") != "html" or not hasattr(app.builder, "highlighter"):
        return
    styles = theme_pygments_styles(app)
    if len(styles) != 2:
        logger.warning(f"the theme names {styles} as its Pygments styles; code keeps every token's span")
        return
    plain = plain_token_types(styles)
    app.builder.highlighter.formatter = plain_token_formatter(plain)
    logger.info(f"code highlighting: {len(plain)} token types drawn as plain text by {styles} are left unwrapped")


def configure_mathjax(app: Sphinx) -> None:
    """MathJax as its components: `startup.js` loads the ones `MATHJAX_COMPONENTS` lists."""
    config = dict(app.config.mathjax3_config or {})
    loader = dict(config.get("loader", {}))
    loader["load"] = MATHJAX_COMPONENTS
    config["loader"] = loader
    app.config.mathjax3_config = config


IMG = re.compile(r"<img\b[^>]*>")
SRC = re.compile(r'\ssrc="([^"]+)"')


def with_image_attributes(body: str, files: dict[str, Path]) -> str:
    """`body` with width, height, loading="lazy" and decoding="async" on each `<img>`; `files`
    maps an image's name in `_images/` to its source file, which gives its size. An attribute
    the image already has is kept."""
    def rewrite(match: re.Match[str]) -> str:
        tag = match.group(0)
        src = SRC.search(tag)
        if src is None or "://" in src.group(1) or src.group(1).startswith("data:"):
            return tag
        added = []
        source = files.get(src.group(1).rsplit("/", 1)[-1])
        if source is not None and source.is_file() and not re.search(r"\s(width|height)=", tag):
            width, height = imagesize.get(source)
            if width > 0 and height > 0:  # an SVG's size in pt comes as CSS pixels, not whole
                added += [f'width="{round(width)}"', f'height="{round(height)}"']
        for name, value in (("loading", "lazy"), ("decoding", "async")):
            if not re.search(rf"\s{name}=", tag):
                added.append(f'{name}="{value}"')
        if not added:
            return tag
        end = -2 if tag.endswith("/>") else -1
        return f"{tag[:end].rstrip()} {' '.join(added)}{tag[end:]}"

    return IMG.sub(rewrite, body)


def lazy_images(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Width, height and lazy loading for the figures in the page's body. (Sphinx copies the
    images to `_images/` after the pages are written: their sizes come from their sources.)"""
    if getattr(app.builder, "format", "") != "html" or "body" not in context:
        return
    files = {target: Path(app.srcdir) / source for source, target in getattr(app.builder, "images", {}).items()}
    context["body"] = with_image_attributes(context["body"], files)


def visit_hidden_cell_input(self: SphinxTranslator, node: Any) -> None:
    """MyST-NB's folded code cell, its summary named by the words it shows."""
    classes = " ".join(node["classes"])
    self.body.append(f'<details class="admonition hide {classes}">\n<summary>\n')
    self.body.append(f'<p class="collapsed admonition-title">{escape(node["prompt_show"])}</p>\n')
    self.body.append(f'<p class="expanded admonition-title">{escape(node["prompt_hide"])}</p>\n')
    self.body.append("</summary>\n")


def depart_hidden_cell_input(self: SphinxTranslator, node: Any) -> None:
    self.body.append("</details>\n")


def setup(app: Sphinx) -> dict[str, Any]:
    from myst_nb.sphinx_ import HideCodeCellNode

    app.setup_extension("myst_nb")
    app.add_node(HideCodeCellNode, override=True, html=(visit_hidden_cell_input, depart_hidden_cell_input))
    # After the theme's own builder-inited handlers have settled its options.
    app.connect("builder-inited", lighter_highlighting, priority=900)
    app.connect("builder-inited", configure_mathjax, priority=900)
    # Before the theme (500) and Sphinx read the page's context.
    app.connect("html-page-context", lazy_images, priority=400)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
