"""Every public name of the last release still imports from where it was; a moved one warns.

`tests/data/public_names_0.1.0.json` lists each module's public top-level names as release
0.1.0 had them (commit 7069235, before the tokenizer, training and IMDB modules were split).
"""

from __future__ import annotations

import importlib
import json
import warnings
from pathlib import Path

import pytest

from scratchformer._compat import MOVED

RELEASED = json.loads((Path(__file__).parent / "data" / "public_names_0.1.0.json").read_text())
NAMES = [(module, name) for module, names in RELEASED["modules"].items() for name in names]


@pytest.mark.parametrize(("module", "name"), NAMES, ids=[f"{m}.{n}" for m, n in NAMES])
def test_every_released_name_still_imports_from_its_old_place(module: str, name: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = getattr(importlib.import_module(module), name)
        except (AttributeError, ImportError) as err:
            pytest.fail(f"{module}.{name} was released in {RELEASED['release']} and no longer imports ({err}). "
                        "Until 1.0 every released name imports from its old place: if it moved, list it in MOVED "
                        "of src/scratchformer/_compat.py with its new module; if it was renamed or removed, keep "
                        "the old name in _compat.py, list it in MOVED under its old module and say what replaces "
                        "it in REPLACED_BY; then name the move in README's changelog (`make check` names every "
                        "such name in one run)")
    assert value is not None or name.isupper()
    deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    new_module = MOVED.get(module, {}).get(name)
    if new_module is None:
        assert not deprecations, [str(w.message) for w in deprecations]
    else:
        assert len(deprecations) == 1 and f"{module}.{name} is deprecated" in str(deprecations[0].message)
        assert deprecations[0].filename == __file__, "the warning points at the caller's line"


def test_the_issue_s_import_works() -> None:
    with pytest.warns(DeprecationWarning, match="import it from scratchformer.word_bpe"):
        from scratchformer.tokenizer import train_word_bpe
    from scratchformer.word_bpe import train_word_bpe as moved

    assert train_word_bpe is moved


def test_a_moved_name_is_the_object_at_its_new_place() -> None:
    for module, names in MOVED.items():
        for name, new_module in names.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                old = getattr(importlib.import_module(module), name)
            assert old is getattr(importlib.import_module(new_module), name), (module, name)
            assert name not in vars(importlib.import_module(module)), f"{module} defines {name} itself"


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import scratchformer.train

    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        scratchformer.train.no_such_name  # noqa: B018
    assert not hasattr(scratchformer.train, "no_such_name")


def test_the_changelog_lists_every_move() -> None:
    changelog = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    missing = [f"{m}.{n}" for m, names in MOVED.items() for n in names if f"`{n}`" not in changelog]
    assert not missing, f"README's changelog does not name {missing}"
