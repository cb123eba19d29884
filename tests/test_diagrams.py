"""The book's drawings (scratchformer.diagrams): the map each chapter opens with, and shape diagrams."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from scratchformer.diagrams import EXAMPLE_IDS, STEPS, Grid, pipeline_map, shape_diagram  # noqa: E402
from scratchformer.gpt2_files import gpt2_encoding  # noqa: E402


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


def test_a_shape_diagram_draws_matrices_and_operations() -> None:
    svg = shape_diagram([
        [Grid("X", 5, 8), "@", Grid("W", 8, 4, shape="(8, 4)"), "=", Grid("Q", 5, 4)],
        [Grid("heads", 3, 3, pages=2, page_colors=["#ff0000", "#0000ff"]), "-> merge ->",
         Grid("merged", 3, 6, col_colors=["#ff0000"] * 3 + ["#0000ff"] * 3)],
    ]).data
    assert "<svg" in svg and svg.count("<path") > 50
