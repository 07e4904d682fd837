"""What the tests share, in one place: no test file imports another test file or ``conftest``.

``tests/`` is on ``sys.path`` while pytest runs (it holds the root ``conftest.py``), so a test writes
``from support.database import FakeEncoder``. Fixtures live in ``tests/conftest.py``; everything else
two test files need lives here, one module a subject:

- ``marks``: what running a lab, or checking a set of exercises, costs, as the markers of ``pyproject.toml``;
- ``notebooks``: the committed notebooks' printed blocks, stdout and figure descriptions;
- ``browser``: JupyterLab in headless Chromium (the server, the scripts run in the page, axe-core);
- ``audit_memo``: the website audit's findings per page, kept while every byte the page loaded is unchanged;
- ``database``: lab 04's fake encoder, small corpora, owner queries and the health checks' faults;
- ``exercises``: the exercise sets' answers from their notebooks, the shared assertions, the grader's runs;
- ``cli``: ``main`` run in this process;
- ``kernels``: the kernel processes below a process.
"""
