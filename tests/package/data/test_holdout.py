"""The validation slice: random reviews as before, or blocks of consecutive reviews of each
label (chapter 11, "Learning from unlabelled reviews")."""

import pytest
import torch

from scratchformer.data.holdout import holdout


def test_random_reviews_are_the_first_of_the_seeds_order() -> None:
    validation, fit = holdout([0] * 6 + [1] * 6, 4, seed=0)
    order = torch.randperm(12, generator=torch.Generator().manual_seed(0))
    assert validation.tolist() == order[:4].tolist() == [8, 0, 5, 9]
    assert fit.tolist() == order[4:].tolist()


def test_blocks_are_consecutive_reviews_of_one_label_in_proportion() -> None:
    validation, fit = holdout([0] * 6 + [1] * 6, 4, seed=0, by="blocks", block_length=2)
    assert validation.tolist() == [4, 5, 10, 11]  # one block of each label, golden
    assert fit.tolist() == [0, 1, 2, 3, 6, 7, 8, 9]
    # interleaved labels: a block is consecutive among its label's reviews
    validation, _ = holdout([1, 0] * 6, 4, seed=3, by="blocks", block_length=2)
    assert validation.tolist() == [5, 7, 4, 6]


def test_blocks_on_imdbs_shape() -> None:
    labels = [0] * 12_500 + [1] * 12_500
    validation, fit = holdout(labels, 2500, seed=0, by="blocks")
    assert len(validation) == 2500 and len(fit) == 22_500
    assert sorted(validation.tolist() + fit.tolist()) == list(range(25_000))
    assert sum(labels[i] for i in validation.tolist()) == 1250
    starts = [i for i in sorted(validation.tolist()) if i - 1 not in set(validation.tolist())]
    assert len(starts) <= 10 and all(s % 250 == 0 for s in starts)  # five blocks a label
    other, _ = holdout(labels, 2500, seed=1, by="blocks")
    assert set(other.tolist()) != set(validation.tolist())


@pytest.mark.parametrize("size, by, block_length, message", [
    (0, "reviews", 250, "between 0 and the 12"),
    (12, "blocks", 2, "between 0 and the 12"),
    (4, "films", 2, "one of \\('reviews', 'blocks'\\), got 'films'"),
    (4, "blocks", 0, "block_length must be positive"),
    (10, "blocks", 4, "label 0 has 6 reviews: too few for 5 in blocks of 4"),
])
def test_bad_requests_are_refused_by_name(size: int, by: str, block_length: int,
                                          message: str) -> None:
    with pytest.raises(ValueError, match=message):
        holdout([0] * 6 + [1] * 6, size, seed=0, by=by, block_length=block_length)


def test_the_training_settings_name_the_slice() -> None:
    from scratchformer.train.engine import TrainConfig

    assert TrainConfig().validation == "reviews"  # as every recorded run held it out
    assert TrainConfig(validation="blocks").validation == "blocks"
    with pytest.raises(ValueError, match=r"validation must be one of \('reviews', 'blocks'\), "
                                         r"got 'films'"):
        TrainConfig(validation="films")
