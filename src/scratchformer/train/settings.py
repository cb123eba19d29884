"""The settings every training run of *Transformers from Scratch* shares, in one base: AdamW's
learning rate and weight decay, the warm-up fraction of the schedule, gradient clipping, the
precision of the forward pass and the seed, each checked the same way when a run's settings
are made. Chapter 11's `TrainConfig`, chapter 12's `GPTTrainConfig` and chapter 13's
`PretrainConfig` extend it with what their runs add (epochs or steps, batches, windows,
masking) and with their own defaults.

Apart from `scratchformer.train.loop` and `scratchformer.train.engine` because its job is
another: the settings the three trainers share (chapter 11, section "The training loop",
describes the fields); it is written by hand.
What this module deliberately does not handle: optimizers other than AdamW, schedules other
than warm-up then linear decay (`scratchformer.train.loop.lr_multiplier`), and settings files.
"""

from dataclasses import dataclass

from scratchformer.measure.evaluation import PRECISIONS
from scratchformer.train.checks import check_numbers


@dataclass
class OptimizerSettings:
    """AdamW, its schedule, clipping, precision and seed: the fields every run's settings
    share, checked in `check_optimizer_settings` (a subclass's `__post_init__` calls it).

    Described in chapter 11, section "The training loop".
    """

    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup: float = 0.1
    grad_clip: float = 1.0
    precision: str = "fp32"
    seed: int = 0

    def check_optimizer_settings(self, whole: tuple[str, ...] = (),
                                 finite: tuple[str, ...] = ()) -> None:
        """Refuse shared fields of the wrong type or out of range, and check the subclass's
        own `whole` (integer) and `finite` (number) fields' types at the same time.

        Described in chapter 11, section "The training loop".
        """
        check_numbers(self, (*whole, "seed"),
                      (*finite, "lr", "weight_decay", "warmup", "grad_clip"))
        if (self.lr <= 0 or self.weight_decay < 0 or self.grad_clip <= 0
                or not 0 <= self.warmup < 1):
            raise ValueError(f"need lr > 0, weight_decay >= 0, grad_clip > 0 and warmup "
                             f"in [0, 1); got {self.lr}, {self.weight_decay}, "
                             f"{self.grad_clip}, {self.warmup}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, "
                             f"got {self.precision!r}")
