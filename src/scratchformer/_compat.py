"""Old import paths keep working, with a DeprecationWarning, until release 1.0.

Release 0.3.0 put the package in sub-packages by layer (`scratchformer.nn.attention` was
`scratchformer.attention`). Every public name of releases 0.1.0 and 0.2.0 still imports from
the module it was in: `from scratchformer.attention import SelfAttention` works and warns,
naming the new place. One table says where each old module went (`MODULE_MOVES`) and, for
names that left their module before that, where each went (`NAME_MOVES`); README's changelog
lists the moves.

An old module that is now a sub-package (`scratchformer.train`, `scratchformer.runs`,
`scratchformer.cli`) answers its old names from its `__init__.py`; every other old module is
made on import by `OldPathFinder`, which `scratchformer/__init__.py` installs. This module does
not handle names that were renamed (only moved or removed), and imports nothing of the package
until a moved name is asked for.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import re
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

# old module -> the module it became in 0.3.0
MODULE_MOVES: dict[str, str] = {
    "scratchformer.files": "scratchformer.io.files",
    "scratchformer.tokenizer": "scratchformer.tokenize.bpe",
    "scratchformer.byte_bpe": "scratchformer.tokenize.byte_bpe",
    "scratchformer.word_bpe": "scratchformer.tokenize.word_bpe",
    "scratchformer.gpt2_files": "scratchformer.tokenize.gpt2_files",
    "scratchformer.embedding": "scratchformer.nn.embedding",
    "scratchformer.positional": "scratchformer.nn.positional",
    "scratchformer.attention": "scratchformer.nn.attention",
    "scratchformer.block": "scratchformer.nn.block",
    "scratchformer.imdb": "scratchformer.data.imdb",
    "scratchformer.framing": "scratchformer.data.framing",
    "scratchformer.batches": "scratchformer.data.batches",
    "scratchformer.gpt_data": "scratchformer.data.windows",
    "scratchformer.review_cache": "scratchformer.data.review_cache",
    "scratchformer.bert": "scratchformer.models.bert",
    "scratchformer.gpt": "scratchformer.models.gpt",
    "scratchformer.pretrain": "scratchformer.models.pretraining",
    "scratchformer.checkpoint": "scratchformer.runs.checkpoint",
    "scratchformer.runs": "scratchformer.runs.folders",
    "scratchformer.hardware": "scratchformer.runs.hardware",
    "scratchformer.guards": "scratchformer.runs.provenance",  # and three others: NAME_MOVES
    "scratchformer.evaluation": "scratchformer.measure.evaluation",
    "scratchformer.baselines": "scratchformer.measure.baselines",
    "scratchformer.ngram": "scratchformer.measure.ngram",
    "scratchformer.train": "scratchformer.train.loop",
    "scratchformer.presets": "scratchformer.train.presets",
    "scratchformer.gpt_train": "scratchformer.train.gpt",
    "scratchformer.pretrain_loop": "scratchformer.train.pretrain",
    "scratchformer.transfer": "scratchformer.train.transfer",
    "scratchformer.classify": "scratchformer.train.classify",
    "scratchformer.web_export": "scratchformer.web.export",
    "scratchformer.web_tokenizer": "scratchformer.web.tokenizer",
    "scratchformer.cli": "scratchformer.cli.commands",
    "scratchformer.gpt_cli": "scratchformer.cli.gpt",
    "scratchformer.gpt_generate": "scratchformer.cli.generate",
    "scratchformer.pretrain_cli": "scratchformer.cli.pretrain",
}

# old module -> {name: the module it is in now}, for names that left their module before 0.3.0
NAME_MOVES: dict[str, dict[str, str]] = {
    "scratchformer.tokenizer": {
        **dict.fromkeys(["Merge", "train_word_bpe", "apply_word_merges"], "scratchformer.tokenize.word_bpe"),
        **dict.fromkeys(["GPT2_FILE_SHA256", "bytes_to_unicode", "gpt2_encoding", "read_gpt2_file"],
                        "scratchformer.tokenize.gpt2_files"),
    },
    "scratchformer.imdb": {
        **dict.fromkeys(["GPT2_VOCAB_SIZE", "PAD_ID", "CLS_ID", "SEP_ID", "VOCAB_SIZE", "TRUNCATIONS",
                         "clean_review", "encode_review", "review_encoding", "careful_encoding",
                         "LINE_BREAK", "frame_tokens", "review_token_lists"],
                        "scratchformer.data.framing"),
        **dict.fromkeys(["attention_mask", "LONG_WHITESPACE"], "scratchformer._compat"),
        **dict.fromkeys(["CACHE_ENV", "tokenizer_fingerprint", "default_cache_dir", "review_tokens",
                         "encode_reviews"], "scratchformer.data.review_cache"),
    },
    "scratchformer.train": {
        "ReviewLoader": "scratchformer.data.batches",
        **dict.fromkeys(["PRECISIONS", "autocast", "is_distributed", "classification_metrics",
                         "evaluate"], "scratchformer.measure.evaluation"),
        **dict.fromkeys(["CHECKPOINT_FORMAT", "CHECKPOINT_VERSION", "BEST_CHECKPOINT", "LAST_CHECKPOINT",
                         "save_checkpoint", "read_checkpoint", "load_checkpoint", "TrainingDiverged",
                         "check_finite_weights", "check_checkpoint"], "scratchformer.runs.checkpoint"),
        "file_sha256": "scratchformer.io.fingerprint",
        **dict.fromkeys(["check_training_state", "data_description", "run_files"],
                        "scratchformer.runs.folders"),
        **dict.fromkeys(["RESULTS_FILE", "RUN_FILES", "FolderLock", "FolderLocked", "loader_fingerprint",
                         "check_run_folder", "interruption_report"], "scratchformer.runs.folders"),
        "clear_run": "scratchformer._compat",
        **dict.fromkeys(["PEAK_BF16_FLOPS", "training_flops_per_token", "hardware_info",
                         "resolve_device"], "scratchformer.runs.hardware"),
        **dict.fromkeys(["PRESETS", "preset", "apply_overrides"], "scratchformer.train.presets"),
        **dict.fromkeys(["main", "build_parser", "run_train_imdb", "run_classify"],
                        "scratchformer.cli.commands"),
        **dict.fromkeys(["check_pipeline_config", "check_before_training"], "scratchformer.train.checks"),
        **dict.fromkeys(["positive_int", "user_path", "command_line_texts", "one_line"],
                        "scratchformer.cli.args"),
        # Chapter 11: the production loop and its settings left the loop module for the engine.
        **dict.fromkeys(["TrainConfig", "train", "planned_steps", "budget_spent"],
                        "scratchformer.train.engine"),
    },
    "scratchformer.guards": {
        **dict.fromkeys(["positive_int", "seed_int", "user_path", "command_line_texts", "stdin_lines",
                         "one_line", "terminal_text"], "scratchformer.cli.args"),
        **dict.fromkeys(["check_pipeline_config", "check_before_training", "SEED_LIMIT", "check_numbers",
                         "check_init_config"], "scratchformer.train.checks"),
        **dict.fromkeys(["config_sha256", "tokenizer_sha256"], "scratchformer.io.fingerprint"),
    },
    "scratchformer.runs": {"file_sha256": "scratchformer.io.fingerprint", "clear_run": "scratchformer._compat"},
    "scratchformer.pretrain": {
        **dict.fromkeys(
            ["OBJECTIVES", "PRETRAIN_FORMAT", "PretrainConfig", "generator_config_of", "build_pretrainer",
             "PretrainingLoss", "save_pretraining", "read_pretraining", "evaluate_pretraining",
             "LAST_PRETRAINING", "snapshot_name", "pretrain", "load_pretrained_encoder", "pretrained_start",
             "encode_labelled"], "scratchformer.train.pretrain"),
        # Chapter 13: the checks in front of the masking left the chapter's generated module.
        "check_mask_inputs": "scratchformer.models.mask_checks",
    },
    # Chapter 12: the windows' bookkeeping left the page for a module written by hand.
    "scratchformer.gpt_data": {"TokenWindows": "scratchformer.data.token_windows"},
}

# What replaces a name that was removed rather than moved.
REPLACED_BY = {
    "attention_mask": "scratchformer.nn.attention.padding_mask(ids, pad_id)[:, 0, 0], or no mask at "
                      "all: the model builds it from config.pad_id",
    "LONG_WHITESPACE": "nothing: the reader no longer needs it",
    "clear_run": "scratchformer.runs.folders.ReplacedRun, which keeps the old run until the new one has "
                 "finished",
}


def new_place(module: str, name: str) -> str | None:
    """The module that now holds `name` of the old `module`, or None if it never had it."""
    return NAME_MOVES.get(module, {}).get(name) or MODULE_MOVES.get(module)


def moved_name(module: str, name: str) -> Any:
    """The object `name` of the old `module`, from its new place, with a DeprecationWarning."""
    new_module = None if name.startswith("__") else new_place(module, name)
    if new_module is None or name not in vars(importlib.import_module(new_module)):
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    if new_module == __name__ and name in REPLACED_BY:
        advice = f"it was removed; use {REPLACED_BY[name]}"
    else:
        advice = f"import it from {new_module}"
    warnings.warn(f"{module}.{name} is deprecated and goes in release 1.0: {advice}",
                  DeprecationWarning, stacklevel=3)
    return getattr(importlib.import_module(new_module), name)


def old_names(module: str) -> Callable[[str], Any]:
    """A module-level `__getattr__` for the old `module`: its names, from their new places.

    Used by `OldPathLoader` and by the `__init__.py` of the old modules that became sub-packages.
    """
    return lambda name: moved_name(module, name)  # the caller's frame is two levels up


class OldPathLoader(importlib.abc.Loader):
    """Makes an old module: an empty module whose names come from their new places."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        name = module.__name__
        module.__doc__ = f"Deprecated: {name} is now {MODULE_MOVES[name]} (until release 1.0)."
        module.__getattr__ = old_names(name)  # type: ignore[method-assign]


class OldPathFinder(importlib.abc.MetaPathFinder):
    """Finds the old modules that are no longer files (not those that became sub-packages)."""

    def find_spec(self, fullname: str, path: object, target: object = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MODULE_MOVES or MODULE_MOVES[fullname].rsplit(".", 1)[0] == fullname:
            return None
        return importlib.util.spec_from_loader(fullname, OldPathLoader())


def attention_mask(ids: Any) -> Any:
    """True where `ids` holds a real token, False at GPT-2's `[PAD]`: the removed helper."""
    from scratchformer.data.framing import PAD_ID

    return ids != PAD_ID


LONG_WHITESPACE = re.compile(r"\s{100000}")


def clear_run(out: Path, also: Sequence[Path] = ()) -> None:
    """Delete a run's `best.pt`, `last.pt`, `results.json` and the files `also` names: the removed
    helper, which lost the old run when the new one then failed."""
    for path in [*(Path(out) / name for name in ("best.pt", "last.pt", "results.json")), *also]:
        Path(path).unlink(missing_ok=True)
