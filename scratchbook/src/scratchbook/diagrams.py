"""Drawings for the book's pages: the map each chapter opens with, and tensor-shape diagrams.

Nothing in the model uses this module. It is written by hand, not exported from a chapter:
every chapter opens with `pipeline_map`, so no chapter could define it before the others use
it. It needs matplotlib (installed with the book's requirements, `pip install .[book]`).

- `pipeline_map(step, here, here_zh)` draws the book's pipeline, text -> tokens -> embeddings +
  positions -> attention -> blocks -> prediction, with one step highlighted; given `here_zh`,
  once for each edition of the book (`show_editions`), the Chinese one in Chinese.
- `show_editions(draw_english, draw_chinese)` shows a figure drawn with English labels on the
  English pages and the same figure drawn with Chinese labels on the Chinese ones (each output
  carries its `edition`); `chinese_font()` finds a font that has Chinese characters.
- `shape_diagram(rows)` draws rows of matrices (`Grid`) and the operations between them, each
  matrix as a grid of cells with its name above and its shape below.
- `record_labels(fig)`, a figure hook that `book/matplotlibrc` installs for every chapter's
  figures, writes into each saved image the smallest text it draws and the image's width, so
  that a test can tell how large the labels appear on the page (`label_record` reads it back).

Both return an `IPython.display.SVG`, which a notebook displays as a sharp vector image.
"""

from __future__ import annotations

import inspect
import io
import json
import logging
import re
from contextlib import contextmanager
from dataclasses import dataclass
from xml.sax.saxutils import quoteattr

# (key, title, example, chapters) for each step of the pipeline, in order.
STEPS = [
    ("text", "text", '"The next day\nis bright"', ""),
    ("tokens", "tokens", "[464, 1306,\n1110, 318,\n6016]", "ch. 1"),
    ("embeddings", "embeddings\n+ positions", "(B, T, C)", "ch. 2-3"),
    ("attention", "attention", "(B, T, C)", "ch. 4-8"),
    ("blocks", "blocks", "(B, T, C)", "ch. 9"),
    ("prediction", "prediction", "next token\nor class", "ch. 10-"),
]
STEPS_ZH = [
    ("text", "文本", '"The next day\nis bright"', ""),
    ("tokens", "词元", "[464, 1306,\n1110, 318,\n6016]", "第 1 章"),
    ("embeddings", "嵌入\n+ 位置", "(B, T, C)", "第 2–3 章"),
    ("attention", "注意力", "(B, T, C)", "第 4–8 章"),
    ("blocks", "块", "(B, T, C)", "第 9 章"),
    ("prediction", "预测", "下一个词元\n或类别", "第 10 章起"),
]
CHINESE_FONTS = ["Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Micro Hei",
                 "WenQuanYi Zen Hei", "PingFang SC", "Microsoft YaHei", "SimHei"]
# GPT-2's ids of the map's example sentence (tests/test_diagrams.py checks them).
EXAMPLE_IDS = [464, 1306, 1110, 318, 6016]
HIGHLIGHT, PLAIN, EDGE = "#f6b042", "#eef1f5", "#4a5568"
SHAPE_PT = 10  # the shapes under a diagram's matrices


def _svg(fig) -> object:
    """The figure as an IPython SVG image (text drawn as paths, ids stable across builds)."""
    from IPython.display import SVG
    from matplotlib import rc_context

    from matplotlib.backends.backend_svg import RendererSVG

    buffer, record = io.StringIO(), {}
    with rc_context({"svg.hashsalt": "scratchformer", "svg.fonttype": "path"}), \
            _recording_labels(RendererSVG, record, lambda renderer: renderer.width):
        fig.savefig(buffer, format="svg", bbox_inches="tight", pad_inches=0.05,
                    metadata={"Date": None})
    attribute = f"{LABEL_RECORD}={quoteattr(json.dumps(record, sort_keys=True))}"
    return SVG(re.sub(r"<svg\b", f"<svg {attribute}", buffer.getvalue(), count=1))


def chinese_font() -> str | None:
    """A font with Chinese characters (Debian's fonts-wqy-microhei, or what the system has),
    for the Chinese edition's figures; None when there is none."""
    from matplotlib import font_manager

    def found() -> str | None:
        installed = {font.name for font in font_manager.fontManager.ttflist}
        return next((name for name in CHINESE_FONTS if name in installed), None)

    if found() is None:  # installed after matplotlib listed the fonts
        parts = ("wqy", "cjk", "sourcehan", "pingfang", "msyh", "simhei")
        for path in font_manager.findSystemFonts():
            if any(part in path.lower() for part in parts):
                font_manager.fontManager.addfont(path)
    return found()


def show_editions(draw_english, draw_chinese) -> None:
    """Display what `draw_english()` returns on the English pages and what `draw_chinese()`
    returns, drawn with a Chinese font, on the Chinese ones (each output's `edition`); without
    a Chinese font, the English drawing alone, on both. A matplotlib figure is closed once
    shown."""
    from IPython.display import display
    from matplotlib import pyplot as plt

    font = chinese_font()
    editions = ([(None, draw_english, None)] if font is None else
                [("en", draw_english, None), ("zh_CN", draw_chinese, ["DejaVu Sans", font])])
    for edition, draw, family in editions:
        with plt.rc_context({"font.family": family} if family else {}):
            drawing = draw()
        display(drawing, metadata={"edition": edition} if edition else None)
        if hasattr(drawing, "savefig"):
            plt.close(drawing)


def pipeline_map(step: str, here: str, here_zh: str | None = None,
                 language: str = "en") -> object:
    """The book's pipeline with `step` highlighted and `here` (e.g. "chapter 4: self-attention")
    written above it, in `language` ("en", or "zh_CN" with the steps named in Chinese). With
    `here_zh`, the map is shown once for each edition (`show_editions`): `here` on the English
    pages, `here_zh` on the Chinese ones. `step` is one of "tokens", "embeddings", "attention",
    "blocks", "prediction" (or "text")."""
    from matplotlib import rc_context

    keys = [key for key, *_ in STEPS]
    if step not in keys:
        raise ValueError(f"step must be one of {keys}, got {step!r}")
    if language not in ("en", "zh_CN"):
        raise ValueError(f"language must be 'en' or 'zh_CN', got {language!r}")
    if here_zh is not None:
        show_editions(lambda: pipeline_map(step, here),
                      lambda: pipeline_map(step, here_zh, language="zh_CN"))
        return None
    steps = STEPS if language == "en" else STEPS_ZH
    font = chinese_font() if language == "zh_CN" else None
    # A Chinese font often has no bold face: matplotlib then draws the regular one, and says so
    # on the page's stderr unless its font logger is quieted while the map is drawn.
    fonts = logging.getLogger("matplotlib.font_manager")
    level = fonts.level
    fonts.setLevel(logging.ERROR)
    try:
        with rc_context({"font.family": ["DejaVu Sans", font]} if font else {}):
            return _draw_map(steps, step, here,
                             ["DejaVu Sans Mono", font] if font else "monospace")
    finally:
        fonts.setLevel(level)


def _draw_map(steps: list[tuple[str, str, str, str]], step: str, here: str,
              monospace: str | list[str]) -> object:
    """`pipeline_map`'s drawing, its labels those of `steps`, its examples in `monospace`."""
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyBboxPatch

    # Drawn at the width of the book's text column (about 7.5 inches), so that 1 pt is 1 pt.
    fig = Figure(figsize=(7.6, 1.75))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 7.6)
    ax.set_ylim(-0.32, 1.43)
    ax.axis("off")
    width, gap = 1.06, 0.24
    for i, (key, title, example, chapters) in enumerate(steps):
        x = 0.02 + i * (width + gap)
        active = key == step
        ax.add_patch(FancyBboxPatch(
            (x, 0), width, 0.98, boxstyle="round,pad=0.01,rounding_size=0.06",
            fc=HIGHLIGHT if active else PLAIN, ec=EDGE, lw=2.0 if active else 0.8))
        ax.text(x + width / 2, 0.72, title, ha="center", va="center", fontsize=11,
                weight="bold" if active else "normal", linespacing=0.95)
        ax.text(x + width / 2, 0.25, example, ha="center", va="center", fontsize=9.5,
                family=monospace, color="#222222", linespacing=1.05)
        ax.text(x + width / 2, -0.17, chapters, ha="center", va="center", fontsize=10,
                color="#444444")
        if active:
            # Centred on its box, but never past the map's ends: a wider image would be
            # scaled down to the column, and its labels with it.
            align = "left" if i == 0 else "right" if i == len(steps) - 1 else "center"
            anchor = {"left": x, "center": x + width / 2, "right": x + width}[align]
            ax.text(anchor, 1.2, here, ha=align, va="center", fontsize=11,
                    weight="bold", color="#8a4b00")
        if i:
            ax.annotate("", xy=(x - 0.02, 0.49), xytext=(x - gap + 0.03, 0.49),
                        arrowprops=dict(arrowstyle="-|>", color=EDGE, lw=1.2))
    return _svg(fig)


@dataclass
class Grid:
    """A matrix to draw: `rows` x `cols` cells, `pages` deep (a stack of matrices, e.g. heads).

    `label` goes above it and `shape` (default "(rows, cols)") below. `col_colors` colours
    the cells column by column (one colour per column), `row_colors` row by row,
    `page_colors` page by page; otherwise every cell gets `color`.
    """

    label: str
    rows: int
    cols: int
    shape: str | None = None
    pages: int = 1
    color: str = "#cfe0f3"
    col_colors: list[str] | None = None
    row_colors: list[str] | None = None
    page_colors: list[str] | None = None

    def page_step(self, cell: float) -> float:
        """How far each page of a stack sits behind the one in front (a deep stack packs tighter)."""
        return 0.45 * cell if self.pages <= 4 else 1.6 * cell / (self.pages - 1)

    def size(self, cell: float) -> tuple[float, float]:
        offset = self.page_step(cell) * (self.pages - 1)
        return self.cols * cell + offset, self.rows * cell + offset


def _draw_grid(ax, grid: Grid, x: float, y_mid: float, cell: float) -> None:
    from matplotlib.patches import Rectangle

    width, height = grid.size(cell)
    y0 = y_mid - height / 2
    step = grid.page_step(cell)
    for page in reversed(range(grid.pages)):  # the front page last, on top
        px, py = x + page * step, y0 + (grid.pages - 1 - page) * step
        for r in range(grid.rows):
            for c in range(grid.cols):
                if grid.col_colors:
                    color = grid.col_colors[c]
                elif grid.row_colors:
                    color = grid.row_colors[r]
                elif grid.page_colors:
                    color = grid.page_colors[page]
                else:
                    color = grid.color
                ax.add_patch(Rectangle((px + c * cell, py + (grid.rows - 1 - r) * cell), cell,
                                       cell, fc=color, ec="white", lw=0.8))
        ax.add_patch(Rectangle((px, py), grid.cols * cell, grid.rows * cell, fill=False,
                               ec=EDGE, lw=1.0))
    ax.text(x + width / 2, y0 + height + 0.06, grid.label, ha="center", va="bottom",
            fontsize=11, weight="bold")
    shape = grid.shape if grid.shape is not None else f"({grid.rows}, {grid.cols})"
    ax.text(x + width / 2, y0 - 0.06, shape, ha="center", va="top", fontsize=SHAPE_PT,
            family="monospace")


def _text_width(text: str, fontsize: float, **font) -> float:
    """The width in inches of `text` (mathtext included; the widest line of several)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextPath

    prop = FontProperties(**font)
    widths = [TextPath((0, 0), line or " ", size=fontsize, prop=prop).get_extents().width
              for line in text.split("\n")]
    return max(widths) / 72


def _op_width(op: str) -> float:
    return max(0.34, _text_width(op, 11) + 0.24)


def _slot_width(grid: Grid, cell: float) -> float:
    """The width a matrix takes in its row: its cells, or its label or shape if wider."""
    shape = grid.shape if grid.shape is not None else f"({grid.rows}, {grid.cols})"
    return max(grid.size(cell)[0], _text_width(grid.label, 11, weight="bold"),
               _text_width(shape, SHAPE_PT, family="monospace")) + 0.3


def shape_diagram(rows: list[list[Grid | str]], cell: float = 0.22, row_gap: float = 0.3) -> object:
    """Rows of matrices (`Grid`) and operations (strings such as "@", "=", "softmax"),
    laid out left to right, one row under the other; sizes in inches (a cell is `cell` wide).
    Returns an SVG."""
    from matplotlib.figure import Figure

    widths, heights = [], []
    for row in rows:
        widths.append(sum(_slot_width(item, cell) if isinstance(item, Grid) else _op_width(item)
                          for item in row))
        grids = [item.size(cell)[1] for item in row if isinstance(item, Grid)]
        heights.append(max(grids, default=0.0) + 0.62)  # room for the label and the shape
    total_w = max(widths)
    total_h = sum(heights) + row_gap * (len(rows) - 1)
    fig = Figure(figsize=(total_w, total_h))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, total_w)
    ax.set_ylim(0, total_h)
    ax.axis("off")
    top = total_h
    for row, h in zip(rows, heights):
        y_mid = top - h / 2 + 0.01
        x = 0.0
        for item in row:
            if isinstance(item, Grid):
                slot = _slot_width(item, cell)
                _draw_grid(ax, item, x + (slot - item.size(cell)[0]) / 2, y_mid, cell)
                x += slot
            else:
                ax.text(x + _op_width(item) / 2, y_mid, item, ha="center", va="center",
                        fontsize=11)
                x += _op_width(item)
        top -= h + row_gap
    return _svg(fig)


# The record each image carries: a PNG text chunk, or an attribute of an SVG's root element.
LABEL_RECORD = "data-scratchformer-labels"


@contextmanager
def _recording_labels(renderer_class, record: dict, width_pt, changed=lambda: None):
    """While drawing with `renderer_class`, keep in `record` the smallest text drawn
    (`smallest_pt`, `text`) and the image's width in points (`width_pt(renderer)`); call
    `changed()` after each text."""
    draw_text = renderer_class.draw_text

    def recording_draw_text(renderer, gc, x, y, s, prop, angle, *args, **kwargs):
        size = prop.get_size_in_points()
        if s.strip() and ("smallest_pt" not in record or size < record["smallest_pt"]):
            record.update(smallest_pt=round(size, 2), text=s)
        record["width_pt"] = round(width_pt(renderer), 2)
        changed()
        return draw_text(renderer, gc, x, y, s, prop, angle, *args, **kwargs)

    renderer_class.draw_text = recording_draw_text
    try:
        yield record
    finally:
        renderer_class.draw_text = draw_text


def record_labels(fig) -> None:
    """A matplotlib figure hook (rcParams["figure.hooks"]): each PNG saved from `fig` carries,
    in a text chunk named `LABEL_RECORD`, the size in points of the smallest text drawn into it
    and the image's width in points, from which a browser's rendered width of the image gives
    the label's size on screen. What the figure shows is unchanged."""
    from matplotlib.backends.backend_agg import RendererAgg

    canvas = fig.canvas
    print_png = canvas.print_png

    accepted = set(inspect.signature(print_png).parameters)

    def recording_print_png(filename_or_obj, *, metadata=None, **kwargs):
        # print_figure passes the options of every format; matplotlib drops those a print
        # method of its own does not take, but not for a wrapper like this one.
        kwargs = {key: value for key, value in kwargs.items() if key in accepted}
        metadata, record = dict(metadata or {}), {}

        def changed() -> None:  # the PNG is written after the drawing, from this dictionary
            metadata[LABEL_RECORD] = json.dumps(record, sort_keys=True)

        with _recording_labels(RendererAgg, record, lambda r: r.width / r.dpi * 72, changed):
            return print_png(filename_or_obj, metadata=metadata, **kwargs)

    canvas.print_png = recording_print_png


def label_record(image: bytes) -> dict | None:
    """The record `record_labels` (PNG) or the book's diagrams (SVG) wrote into an image:
    {"smallest_pt", "text", "width_pt"}, or None when the image carries none."""
    if image.startswith(b"\x89PNG"):
        from PIL import Image

        text = Image.open(io.BytesIO(image)).text.get(LABEL_RECORD)
        return json.loads(text) if text else None
    from xml.dom import minidom

    root = minidom.parseString(image).documentElement
    return json.loads(root.getAttribute(LABEL_RECORD)) if root.hasAttribute(LABEL_RECORD) else None


def loss_curves(curves: dict[str, list[float]], every: int, floor: float, floor_label: str,
                ylabel: str, xlabel: str = "step") -> object:
    """Each curve of `curves` (a loss read every `every` steps, by label) against the step,
    with a dashed line at `floor` (`floor_label`); the words are the caller's (one set for
    each edition, with `show_editions`). Returns the figure.

    Drawn in chapter 13, "Can it learn context at all?"."""
    import matplotlib.pyplot as plt

    fig, axis = plt.subplots(figsize=(6.5, 2.7))
    for (label, curve), marker in zip(curves.items(), "osd^v"):
        axis.plot([every * i for i in range(len(curve))], curve, f"{marker}-", label=label)
    axis.axhline(floor, color="gray", linestyle="--", label=floor_label)
    axis.set_ylim(0, None)
    axis.set_xlabel(xlabel)
    axis.set_ylabel(ylabel)
    axis.legend()
    axis.grid(alpha=0.3)
    fig.tight_layout()
    return fig


CACHE_WORDS = {
    "en": {"keys": "keys", "values": "values", "title": "layer {layer}, head {head}",
           "notes": ["a row: {head_dim} numbers for one token; grey: kept for the tokens read",
                     "orange: the new token's key and value, appended to every matrix",
                     "q (hatched): the new token's query, compared with every key, then dropped"]},
    "zh_CN": {"keys": "键", "values": "值", "title": "第 {layer} 层，第 {head} 个头",
              "notes": ["一行：一个词元的 {head_dim} 个数；灰色：为已读词元保留",
                        "橙色：新词元的键和值，追加到每个矩阵",
                        "q（斜线）：新词元的查询，与每个键比较后丢弃"]},
}


def kv_cache_diagram(layers: int, heads: int, head_dim: int, edition: str = "en",
                     read: int = 3) -> object:
    """What a GPT's key/value cache keeps: per layer and head, a matrix of keys and one of
    values with a row per token read (`read` drawn, grey) and the new token's rows appended
    (orange); the new token's query (hatched) meets every key of its head and is not kept.
    The words in `edition`'s language; returns the figure.

    Drawn in chapter 12, "Try it"."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    words = CACHE_WORDS[edition]
    new, kept = "#f0a040", "#d8d8d8"  # the new token's rows; the rows the cache keeps
    fig, axes = plt.subplots(layers, heads, figsize=(8, 1.35 * layers + 1.0), squeeze=False)
    for layer in range(layers):
        for head in range(heads):
            ax = axes[layer][head]
            for left, name in ((1.0, words["keys"]), (2.2, words["values"])):
                for row in range(read + 1):
                    ax.add_patch(Rectangle((left, read - row), 1, 0.8, linewidth=0.6, edgecolor="#555",
                                           facecolor=new if row == read else kept))
                ax.text(left + 0.5, read + 1.0, name, ha="center", va="bottom", fontsize=10)
            ax.add_patch(Rectangle((0, 0), 0.5, 0.8, facecolor=new, edgecolor="#555",
                                   linewidth=0.6, hatch="//"))
            ax.text(0.25, 1.0, "q", ha="center", va="bottom", fontsize=10)
            for row in range(read + 1):  # the new query meets every key of its head
                ax.plot([0.5, 1.0], [0.4, read - row + 0.4], color="#b05000", linewidth=0.7)
            ax.set_title(words["title"].format(layer=layer + 1, head=head + 1), fontsize=10)
            ax.set_xlim(-0.05, 3.25)
            ax.set_ylim(-0.1, read + 1.9)
            ax.axis("off")
    for line, note in enumerate(words["notes"]):
        fig.text(0.5, 0.13 - 0.06 * line, note.format(head_dim=head_dim), ha="center", fontsize=10)
    fig.tight_layout(rect=(0, 0.19, 1, 1))
    return fig
