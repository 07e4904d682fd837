"""What a subpackage offers a notebook, imported on first use (PEP 562).

A subpackage's ``__init__`` lists the names its notebooks import, under the module that defines
each, and ``lazy_exports`` gives it ``__all__``, ``__getattr__`` and ``__dir__``::

    __all__, __getattr__, __dir__ = lazy_exports(__name__, {"dense": ["DenseEncoder", "MODEL_NAME"]})

so a cell writes ``from ragcourse.engines import DenseEncoder``. Importing the package imports none
of its modules: only touching a name imports the module that defines it (``import ragcourse.engines``
loads neither torch nor sentence-transformers), and the name is then kept on the package. A name
has one home: each is listed under one module, and ``tests/test_first_cells.py`` checks that no
name is offered by two subpackages and that every listed name exists.
"""
from __future__ import annotations

import sys

# typing, collections.abc and importlib cost a fresh interpreter milliseconds: the annotations are strings, and
# importlib is imported when a name is first touched.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

# package -> name -> the module (relative to the package) that defines it, for every package with exports
HOMES: dict[str, dict[str, str]] = {}


def lazy_exports(package: str, exports: dict[str, list[str]]) -> tuple[list[str], Callable, Callable]:
    """``(__all__, __getattr__, __dir__)`` for ``package``, whose modules define the names of ``exports``.

    ``exports`` maps a module of the package, relative to it (``"dense"``, ``"chunking.splitters"``),
    to the names it defines that the package offers. ValueError if a name is listed twice.
    """
    home: dict[str, str] = {}
    for module, names in exports.items():
        for name in names:
            if name in home:
                raise ValueError(f"exports: {name!r} is listed under both {home[name]!r} and {module!r} "
                                 f"of {package}; a name is offered from one module")
            home[name] = module
    HOMES[package] = home

    def __getattr__(name: str):
        if name not in home:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib
        value = getattr(importlib.import_module(f"{package}.{home[name]}"), name)
        setattr(sys.modules[package], name, value)   # the next lookup finds it without this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(home))

    return sorted(home), __getattr__, __dir__



def defining_module(package: str, name: str) -> str | None:
    """The absolute module that defines ``name`` offered by ``package`` (None: the package offers no such name,
    or ``package`` cannot be imported). Importing a package with exports loads none of its modules, so asking
    is cheap; the batch runner asks, to pre-import what a notebook's first cell will load."""
    import importlib

    try:
        importlib.import_module(package)
    except Exception:
        return None
    home = HOMES.get(package, {}).get(name)
    return None if home is None else f"{package}.{home}"
