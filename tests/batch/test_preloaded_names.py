"""The batch runner pre-imports what a first cell will load, also when it imports a subpackage's offered names."""
from ragcourse.batch.runner import imported_modules
from ragcourse.toolkit.lazy import defining_module


def notebook(*sources: str) -> dict:
    return {"cells": [{"cell_type": "code", "source": s} for s in sources]}


def test_an_offered_name_brings_its_defining_module():
    nb = notebook("import numpy as np\nfrom ragcourse.engines import DenseEncoder, answers\n"
                  "from ragcourse.toolkit import print_table")
    assert imported_modules(nb) == ["numpy", "ragcourse.engines", "ragcourse.engines.dense",
                                    "ragcourse.engines.catalogue", "ragcourse.toolkit", "ragcourse.toolkit.tables"]


def test_a_deep_import_and_an_unknown_name_add_nothing_more():
    nb = notebook("from ragcourse.rag.generator import MODEL_NAME\nfrom ragcourse.engines import NoSuchName\n"
                  "from collections import Counter")
    assert imported_modules(nb) == ["ragcourse.rag.generator", "ragcourse.engines", "collections"]


def test_defining_module_answers_none_for_what_it_cannot_place():
    assert defining_module("ragcourse.engines", "DenseEncoder") == "ragcourse.engines.dense"
    assert defining_module("ragcourse.engines", "nothing") is None
    assert defining_module("ragcourse.no_such_package", "x") is None


def test_a_deep_module_is_not_imported_to_be_asked():
    import subprocess
    import sys

    code = ("import sys\nfrom ragcourse.batch.runner import imported_modules\n"
            "imported_modules({'cells': [{'cell_type': 'code', 'source': 'from ragcourse.rag.generator import X'}]})\n"
            "print('ragcourse.rag.generator' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
