"""axe-core's findings on a website page, kept while every byte that page loaded stays the same (issue 54).

``tests/site/test_site.py`` audits every page of the website in both colour modes. That is the largest
single cost of ``make test``: about 200 CPU-seconds of Chromium, most of it axe's colour-contrast rule.
The site build is reproducible (two builds of one commit are the same bytes), so an audit is a function
of what the browser was given: the page's HTML and every file it loaded (style sheets, scripts, fonts,
figures), the axe-core script and the scripts that run it, the Chromium version, the viewport and the
colour mode. ``AuditMemo`` keeps each page's findings under that key in
``$RAGCOURSE_CACHE_DIR/site-audit/`` and hands them back only when every file the page loaded last time
hashes the same now. A byte changed anywhere, a page added, another axe-core or Chromium: the page is
audited again. A fresh machine (CI) has an empty cache and audits every page; ``RAGCOURSE_SITE_AUDIT=fresh``
audits every page whatever the cache holds (and refreshes it).

A page that asked for anything outside the site's folder is never kept: its findings could depend on
what it was given from elsewhere.
"""
from __future__ import annotations

import hashlib
import json
import os
import urllib.parse
from pathlib import Path

FRESH_VARIABLE = "RAGCOURSE_SITE_AUDIT"
FORMAT = 1


def cache_root() -> Path:
    """``site-audit`` in the course's cache folder (``ragcourse.engines.dense.cache_dir``)."""
    from ragcourse.engines.dense import cache_dir

    return cache_dir() / "site-audit"


def audit_fresh() -> bool:
    """Whether ``RAGCOURSE_SITE_AUDIT=fresh`` asks for every page to be audited again."""
    value = os.environ.get(FRESH_VARIABLE, "")
    if value not in ("", "fresh"):
        raise ValueError(f"{FRESH_VARIABLE} must be 'fresh' or unset; got {value!r}")
    return value == "fresh"


def setup_key(**parts) -> str:
    """One digest of everything besides the site's files that decides an audit (scripts, versions, mode)."""
    return hashlib.sha256(json.dumps({"format": FORMAT, **parts}, sort_keys=True).encode()).hexdigest()[:20]


def site_file(site: Path, site_url: str, url: str) -> str | None:
    """The path under ``site`` that ``url`` names (relative, POSIX), or None when it names nothing there.

    The path may name no file: axe-core fetches a page's style sheets again and resolves an ``@import``
    against the page, not the sheet (``_static/styles/theme.css`` imports ``../basic.css``, which axe asks
    for at the site's root). Such a request got a 404; it is kept as a file that must still be missing."""
    if url.startswith(("data:", "blob:")):
        return ""            # nothing fetched: nothing to hash
    if not url.startswith(site_url):
        return None
    path = urllib.parse.unquote(urllib.parse.urlsplit(url[len(site_url) - 1:]).path).lstrip("/")
    if path == "" or path.endswith("/"):
        path += "index.html"
    resolved = (site / path).resolve()
    if not resolved.is_relative_to(site.resolve()):
        return None
    return resolved.relative_to(site.resolve()).as_posix()


class AuditMemo:
    """Findings per page for one setup (``setup_key``), valid while the page's files hash the same."""

    def __init__(self, site: Path, site_url: str, key: str, root: Path | None = None, fresh: bool | None = None):
        self.site, self.site_url, self.key = site, site_url, key
        self.path = (root or cache_root()) / f"{key}.json"
        self.fresh = audit_fresh() if fresh is None else fresh
        self.reused: list[str] = []
        self.audited: list[str] = []
        self._digests: dict[str, str] = {}
        self._entries: dict[str, dict] = {}
        if self.path.exists() and not self.fresh:
            try:
                self._entries = json.loads(self.path.read_text())["pages"]
            except (ValueError, KeyError, TypeError):
                self._entries = {}          # a damaged memo is only a miss

    def digest(self, relative: str) -> str | None:
        """sha256 of a file of the site, once per run; None when there is none."""
        if relative not in self._digests:
            path = self.site / relative
            self._digests[relative] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
        return self._digests[relative]

    def recall(self, page: str) -> dict | None:
        """The page's kept result (``{"state", "findings"}``) when every file it loaded is unchanged."""
        entry = self._entries.get(page)
        if entry is None or entry["files"].get(page) is None:
            return None
        if any(self.digest(relative) != sha for relative, sha in entry["files"].items()):
            return None
        self.reused.append(page)
        return entry["result"]

    def keep(self, page: str, requested: list[str], result: dict) -> None:
        """Record ``result`` for ``page``, which asked for the URLs ``requested`` while it was audited."""
        self.audited.append(page)
        files = [site_file(self.site, self.site_url, url) for url in requested]
        if page not in files or any(f is None for f in files):
            self._entries.pop(page, None)   # something not a file of the site: never reused
            return
        self._entries[page] = {"files": {f: self.digest(f) for f in sorted(set(files)) if f},
                               "result": result}

    def save(self) -> None:
        """Write the memo whole (a temporary file, then a rename): never half a file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(json.dumps({"key": self.key, "pages": self._entries}))
        partial.replace(self.path)

    def summary(self) -> str:
        audited = f"{len(self.audited)} audited" + (f" ({', '.join(self.audited)})" if 0 < len(self.audited) <= 3 else "")
        if not self.reused:
            return audited
        return (f"{audited}, {len(self.reused)} reused from {self.path} "
                f"(every byte they loaded unchanged; {FRESH_VARIABLE}=fresh audits them all)")
