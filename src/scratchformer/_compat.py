"""Names that left a module keep working from their old place for one release.

A generated module named in `MOVED` ends with a module-level `__getattr__` (written by
`tools/export.py`) that calls `moved_name`: `from scratchformer.tokenizer import
train_word_bpe` still works, and warns with a `DeprecationWarning` that names the new place.
README's changelog lists every move. This module does not handle names that were renamed
(only moved or removed), and imports nothing of the package until a moved name is asked for.
"""

from __future__ import annotations

import importlib
import re
import warnings
from typing import Any

# old module -> {name: new module}; the release after 0.2.0 drops these.
MOVED: dict[str, dict[str, str]] = {
    "scratchformer.tokenizer": {
        **dict.fromkeys(["Merge", "train_word_bpe", "apply_word_merges"], "scratchformer.word_bpe"),
        **dict.fromkeys(["GPT2_FILE_SHA256", "bytes_to_unicode", "gpt2_encoding", "read_gpt2_file"],
                        "scratchformer.gpt2_files"),
    },
    "scratchformer.imdb": {
        **dict.fromkeys(["GPT2_VOCAB_SIZE", "PAD_ID", "CLS_ID", "SEP_ID", "VOCAB_SIZE", "TRUNCATIONS",
                         "clean_review", "encode_review", "review_encoding", "careful_encoding",
                         "LINE_BREAK", "frame_tokens", "review_token_lists"],
                        "scratchformer.framing"),
        **dict.fromkeys(["attention_mask", "LONG_WHITESPACE"], "scratchformer._compat"),
        **dict.fromkeys(["CACHE_ENV", "tokenizer_fingerprint", "default_cache_dir", "review_tokens",
                         "encode_reviews"], "scratchformer.review_cache"),
    },
    "scratchformer.train": {
        **dict.fromkeys(["CHECKPOINT_FORMAT", "check_finite_weights", "check_checkpoint"],
                        "scratchformer.checkpoint"),
        **dict.fromkeys(["RESULTS_FILE", "RUN_FILES", "FolderLock", "FolderLocked", "loader_fingerprint",
                         "check_run_folder", "clear_run", "interruption_report"], "scratchformer.runs"),
        **dict.fromkeys(["PEAK_BF16_FLOPS", "training_flops_per_token"], "scratchformer.hardware"),
        **dict.fromkeys(["PRESETS", "preset", "apply_overrides"], "scratchformer.presets"),
        **dict.fromkeys(["main", "build_parser", "run_train_imdb", "run_classify"], "scratchformer.cli"),
        **dict.fromkeys(["check_pipeline_config", "check_before_training", "positive_int", "user_path",
                         "command_line_texts", "one_line"], "scratchformer.guards"),
    },
    "scratchformer.pretrain": dict.fromkeys(
        ["OBJECTIVES", "PRETRAIN_FORMAT", "PretrainConfig", "generator_config_of", "build_pretrainer",
         "PretrainingLoss", "save_pretraining", "read_pretraining", "evaluate_pretraining",
         "LAST_PRETRAINING", "snapshot_name", "pretrain", "load_pretrained_encoder", "pretrained_start",
         "encode_labelled"], "scratchformer.pretrain_loop"),
}

# What replaces a name that was removed rather than moved.
REPLACED_BY = {
    "attention_mask": "scratchformer.attention.padding_mask(ids, pad_id)[:, 0, 0], or no mask at "
                      "all: the model builds it from config.pad_id",
    "LONG_WHITESPACE": "nothing: the reader no longer needs it",
}


def moved_name(module: str, name: str) -> Any:
    """The object `name` of `module` that now lives elsewhere, with a DeprecationWarning."""
    new_module = MOVED.get(module, {}).get(name)
    if new_module is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    if name in REPLACED_BY:
        advice = f"it was removed; use {REPLACED_BY[name]}"
    else:
        advice = f"import it from {new_module}"
    warnings.warn(f"{module}.{name} is deprecated and goes in the next release: {advice}",
                  DeprecationWarning, stacklevel=3)
    return getattr(importlib.import_module(new_module), name)


def attention_mask(ids: Any) -> Any:
    """True where `ids` holds a real token, False at GPT-2's `[PAD]`: the removed helper."""
    from scratchformer.framing import PAD_ID

    return ids != PAD_ID


LONG_WHITESPACE = re.compile(r"\s{100000}")
