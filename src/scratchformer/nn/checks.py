"""The argument checks of chapters 4-8's attention, as *Transformers from Scratch* uses them:
each raises an error that names the argument and says what it must be, before torch would
fail deep inside a matrix product with a message about `m1` and `m2`, or compute something
other than what was asked (keys of float64 mixed into float32 queries).

Written by hand, not exported: the chapters teach attention and call these checks in one line
each, without showing them. What this module deliberately does not handle: the shapes of the
inputs (the chapters check those where they name the dimensions), and masks
(`scratchformer.nn.attention.check_mask`).
"""

import torch
from torch import Tensor


def check_positive_int(name: str, value: object) -> None:
    """Raise `ValueError` unless `value` is an integer of at least 1 (a bool or 2.5 is not).

    Described in chapter 6, section "Only the past".
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def check_values(name: str, tensor: object) -> None:
    """Raise unless `tensor` is a floating-point tensor holding values: not a list, not
    integers, not on the `meta` device (which holds shapes only).

    Described in chapter 4, section "Five matrix multiplications and one transpose".
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}; "
                        "use torch.tensor(...)")
    if not tensor.is_floating_point():
        raise TypeError(f"{name} must hold floating-point numbers, got {tensor.dtype}; "
                        f"convert it with {name}.float()")
    if tensor.is_meta:
        raise ValueError(f"{name} is on the meta device, which holds shapes but no "
                         "values: attention needs values; build it on cpu or cuda")


def check_qkv_types(q: Tensor, k: Tensor, v: Tensor) -> None:
    """Raise unless queries, keys and values are floating-point tensors with values, of
    one dtype and on one device.

    Described in chapter 4, section "Five matrix multiplications and one transpose".
    """
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        check_values(name, tensor)
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"q, k and v must have one dtype, got {q.dtype}, {k.dtype} and "
                        f"{v.dtype}; convert them to one (for example with .float())")
    if not q.device == k.device == v.device:
        raise ValueError(f"q, k and v must be on one device, got {q.device}, {k.device} "
                         f"and {v.device}; move them with .to(device)")


def check_input(x: Tensor, weight: Tensor, name: str = "x") -> None:
    """Raise unless `x` can go through a layer whose weights are `weight`: a
    floating-point tensor with values, on the weights' device and of their dtype (under
    `torch.autocast`, which casts as it multiplies, of any floating dtype).

    Described in chapter 4, section "The module".
    """
    check_values(name, x)
    if x.device != weight.device:
        raise ValueError(f"{name} is on {x.device} and the module's weights on "
                         f"{weight.device}; move one to the other with .to(device)")
    if x.dtype != weight.dtype and not torch.is_autocast_enabled(x.device.type):
        raise TypeError(f"{name} is {x.dtype} and the module's weights are "
                        f"{weight.dtype}; convert {name} with {name}.to({weight.dtype}), "
                        "or the module with .to(dtype)")
