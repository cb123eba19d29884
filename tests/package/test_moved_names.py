"""Every public name of the last two releases still imports from where it was, and warns.

`tests/data/public_names_0.1.0.json` and `public_names_0.2.0.json` list each module's public
top-level names as those releases had them; release 0.3.0 moved every module into a sub-package
by layer (`scratchformer._compat.MODULE_MOVES`), so each old path now warns, naming the new one.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from conftest import ROOT
from scratchformer._compat import MODULE_MOVES, NAME_MOVES, new_place

DATA = ROOT / "tests" / "data"
RELEASES = {release: json.loads((DATA / f"public_names_{release}.json").read_text())["modules"]
            for release in ("0.1.0", "0.2.0")}
NAMES = sorted({(module, name) for modules in RELEASES.values() for module, names in modules.items()
                for name in names if module != "scratchformer.__init__"})


@pytest.mark.parametrize(("module", "name"), NAMES, ids=[f"{m}.{n}" for m, n in NAMES])
def test_every_released_name_still_imports_from_its_old_place(module: str, name: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = getattr(importlib.import_module(module), name)
        except (AttributeError, ImportError) as err:
            pytest.fail(f"{module}.{name} was released and no longer imports ({err}). Until 1.0 every "
                        "released name imports from its old place: if its module moved, list the module "
                        "in MODULE_MOVES of src/scratchformer/_compat.py; if the name left its module, "
                        "list it in NAME_MOVES under the old module with its new one; if it was removed, "
                        "keep it in _compat.py and say what replaces it in REPLACED_BY; then name the move "
                        "in README's changelog (`make check` names every such name in one run)")
    deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    if module not in MODULE_MOVES:  # a module that stayed where it was (the chapters' maps)
        assert not deprecations, [str(w.message) for w in deprecations]
        return
    assert len(deprecations) == 1, [str(w.message) for w in caught]
    message = str(deprecations[0].message)
    assert message.startswith(f"{module}.{name} is deprecated and goes in release 1.0: "), message
    assert deprecations[0].filename == __file__, "the warning points at the caller's line"
    new_module = new_place(module, name)
    removed = new_module == "scratchformer._compat"  # removed, not moved: the message says what replaces it
    assert ("it was removed; use" if removed else f"import it from {new_module}") in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new place imports without a warning
        assert value is getattr(importlib.import_module(new_module), name)


def test_every_old_module_is_in_the_table() -> None:
    released = {m for modules in RELEASES.values() for m in modules} - {"scratchformer.__init__",
                                                                        "scratchformer.diagrams"}
    assert released <= set(MODULE_MOVES), sorted(released - set(MODULE_MOVES))
    for old, new in MODULE_MOVES.items():
        assert importlib.util.find_spec(new) is not None, f"{old} -> {new}, which does not exist"
    for old, names in NAME_MOVES.items():
        for name, new in names.items():
            assert name in vars(importlib.import_module(new)), f"{old}.{name} -> {new}, which lacks it"


def test_an_old_name_for_a_new_sub_package_is_not_shadowed_by_a_sub_module() -> None:
    # `scratchformer.train` is both an old module and a new sub-package: its old names and its
    # new sub-modules' names must differ, or `from scratchformer.train import x` would be ambiguous.
    for old, new in MODULE_MOVES.items():
        package = new.rsplit(".", 1)[0]
        if package != old:
            continue
        submodules = {p.stem for p in Path(importlib.import_module(package).__file__).parent.glob("*.py")}
        names = {n for modules in RELEASES.values() for n in modules.get(old, [])}
        assert not names & submodules, (old, sorted(names & submodules))


def test_the_issue_s_import_works() -> None:
    with pytest.warns(DeprecationWarning, match="import it from scratchformer.tokenize.word_bpe"):
        from scratchformer.tokenizer import train_word_bpe
    from scratchformer.tokenize.word_bpe import train_word_bpe as moved

    assert train_word_bpe is moved


def test_the_old_module_form_of_import_works() -> None:
    with pytest.warns(DeprecationWarning, match="import it from scratchformer.nn.attention"):
        import scratchformer.attention as old

        attention = old.SelfAttention
    from scratchformer.nn.attention import SelfAttention

    assert attention is SelfAttention


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import scratchformer.train

    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        scratchformer.train.no_such_name  # noqa: B018
    assert not hasattr(scratchformer.train, "no_such_name")
    with pytest.raises(AttributeError, match="'scratchformer.attention' has no attribute 'nothing'"):
        importlib.import_module("scratchformer.attention").nothing  # noqa: B018


def test_a_module_that_never_existed_is_still_not_found() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("scratchformer.no_such_module")


def test_the_package_imports_without_a_warning() -> None:
    # Importing the package and its new modules must not touch an old path.
    code = ("import warnings; warnings.simplefilter('error'); import scratchformer, "
            "scratchformer.cli.commands, scratchformer.web.export, scratchformer.train.transfer")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_changelog_lists_every_move() -> None:
    changelog = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [f"{old} -> {new}" for old, new in MODULE_MOVES.items()
               if f"`{old}` | `{new}`" not in changelog]
    assert not missing, f"README's changelog does not list {missing}"
