"""The book's drawings (scratchbook.diagrams): the map each chapter opens with, and shape diagrams."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("matplotlib")

from scratchbook.diagrams import (EXAMPLE_IDS, STEPS, STEPS_ZH, Grid, chinese_font,  # noqa: E402
                                  kv_cache_diagram, loss_curves, pipeline_map, shape_diagram)
from scratchformer.tokenize.gpt2_files import gpt2_encoding  # noqa: E402


def test_the_map_shows_gpt2s_ids_of_its_example_sentence() -> None:
    assert gpt2_encoding().encode("The next day is bright") == EXAMPLE_IDS
    tokens = next(example for key, _, example, _ in STEPS if key == "tokens")
    assert tokens.replace("\n", " ") == "[" + ", ".join(map(str, EXAMPLE_IDS)) + "]"


@pytest.mark.parametrize("step", [key for key, *_ in STEPS])
def test_the_map_draws_every_step(step: str) -> None:
    svg = pipeline_map(step, f"here: {step}").data
    assert svg.lstrip().startswith("<svg")
    assert svg == pipeline_map(step, f"here: {step}").data, "the drawing is deterministic"


def test_the_map_refuses_an_unknown_step() -> None:
    with pytest.raises(ValueError, match="step must be one of"):
        pipeline_map("embedding", "chapter 2")
    with pytest.raises(ValueError, match="language must be 'en' or 'zh_CN'"):
        pipeline_map("tokens", "chapter 1", language="zh")


def test_the_chinese_map_names_the_same_steps_in_chinese() -> None:
    assert [key for key, *_ in STEPS_ZH] == [key for key, *_ in STEPS]
    assert [example for *_, example, _ in STEPS_ZH[:-1]] == [example for *_, example, _ in STEPS[:-1]]
    assert all(re.search(r"[\u4e00-\u9fff]", title) for _, title, *_ in STEPS_ZH)
    chinese = pipeline_map("attention", "第 4 章：自注意力", language="zh_CN").data
    english = pipeline_map("attention", "chapter 4: self-attention").data
    assert chinese.lstrip().startswith("<svg") and chinese != english


def test_the_map_for_both_editions_shows_each_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[tuple[str, object]] = []
    monkeypatch.setattr("IPython.display.display",
                        lambda drawing, metadata=None: shown.append((metadata, drawing.data)))
    assert pipeline_map("tokens", "chapter 1: tokenization", "第 1 章：词元化") is None
    english = pipeline_map("tokens", "chapter 1: tokenization").data
    if chinese_font() is None:
        assert shown == [(None, english)], "without a Chinese font, the English map for both"
    else:
        assert [metadata for metadata, _ in shown] == [{"edition": "en"}, {"edition": "zh_CN"}]
        assert shown[0][1] == english and shown[1][1] != english


def test_a_shape_diagram_draws_matrices_and_operations() -> None:
    svg = shape_diagram([
        [Grid("X", 5, 8), "@", Grid("W", 8, 4, shape="(8, 4)"), "=", Grid("Q", 5, 4)],
        [Grid("heads", 3, 3, pages=2, page_colors=["#ff0000", "#0000ff"]), "-> merge ->",
         Grid("merged", 3, 6, col_colors=["#ff0000"] * 3 + ["#0000ff"] * 3)],
    ]).data
    assert "<svg" in svg and svg.count("<path") > 50


def test_loss_curves_draw_each_curve_against_its_steps_and_the_floor() -> None:
    import matplotlib.pyplot as plt

    fig = loss_curves({"with": [3.0, 2.0, 1.0], "without": [3.0, 3.0]}, 50, 2.5, "floor", "loss",
                      xlabel="步")
    axis = fig.axes[0]
    lines = axis.get_lines()
    assert [line.get_label() for line in lines] == ["with", "without", "floor"]
    assert list(lines[0].get_xdata()) == [0, 50, 100] and list(lines[0].get_ydata()) == [3, 2, 1]
    assert list(lines[2].get_ydata()) == [2.5, 2.5]
    assert (axis.get_xlabel(), axis.get_ylabel()) == ("步", "loss")
    plt.close("all")


def test_a_saved_figure_records_its_smallest_label_and_its_width() -> None:
    """What the browser test reads: the smallest text drawn (legends, ticks, annotations) and
    the image's width in points, from the PNG the notebook displays."""
    import io

    from IPython.core.pylabtools import print_figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from PIL import Image

    from scratchbook.diagrams import label_record, record_labels

    fig = Figure(figsize=(5, 3), dpi=100)
    FigureCanvasAgg(fig)  # what pyplot gives a figure before calling the hooks
    record_labels(fig)
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], label="a line")
    ax.set_xlabel("x", fontsize=12)
    ax.legend(fontsize=6.5)
    ax.annotate("", xy=(0.5, 0.5), xytext=(0.2, 0.2))  # an empty text is no label
    png = print_figure(fig, "png", bbox_inches="tight")
    record = label_record(png)
    assert record is not None
    assert record["smallest_pt"] == 6.5 and record["text"] == "a line"
    width_px = Image.open(io.BytesIO(png)).size[0]
    assert abs(record["width_pt"] - width_px / 100 * 72) < 0.01


def test_a_figure_without_the_hook_carries_no_record() -> None:
    from IPython.core.pylabtools import print_figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from scratchbook.diagrams import label_record

    fig = Figure(figsize=(2, 2))
    FigureCanvasAgg(fig)
    fig.add_subplot().set_title("title")
    assert label_record(print_figure(fig, "png")) is None


def test_the_diagrams_record_their_smallest_label() -> None:
    from scratchbook.diagrams import SHAPE_PT, label_record

    map_record = label_record(pipeline_map("tokens", "chapter 1: tokenization").data.encode())
    assert map_record["smallest_pt"] == 9.5 and map_record["width_pt"] > 400
    shapes = label_record(shape_diagram([[Grid("X", 5, 8), "@", Grid("W", 8, 4)]]).data.encode())
    assert shapes["smallest_pt"] == SHAPE_PT and shapes["text"] == "(5, 8)"


def test_the_chapters_figures_use_the_books_style() -> None:
    """MyST-NB runs each chapter in book/, where matplotlib reads book/matplotlibrc."""
    from matplotlib import rc_params_from_file

    from support import ROOT

    style = rc_params_from_file(ROOT / "book" / "matplotlibrc", use_default_template=False)
    assert "scratchbook.diagrams:record_labels" in style["figure.hooks"]
    assert style["font.size"] >= 11


@pytest.mark.parametrize("edition, title, keys", [("en", "layer 2, head 3", "keys"),
                                                  ("zh_CN", "第 2 层，第 3 个头", "键")])
def test_the_cache_diagram_draws_every_layer_and_head_in_its_editions_words(
        edition: str, title: str, keys: str) -> None:
    import matplotlib.pyplot as plt

    fig = kv_cache_diagram(2, 3, 32, edition=edition)
    titles = [ax.get_title() for ax in fig.axes]
    assert len(titles) == 6 and titles[-1] == title
    texts = [text.get_text() for ax in fig.axes for text in ax.texts]
    assert texts.count(keys) == 6 and texts.count("q") == 6
    assert any("32" in text.get_text() for text in fig.texts)  # a row's numbers: the head's size
    plt.close(fig)
