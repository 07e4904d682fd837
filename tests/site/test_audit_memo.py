"""The website audit's memo (``support.audit_memo``): findings come back only for the same bytes.

Plain files, no browser: what a page "loaded" is the list of URLs the audit recorded."""
from __future__ import annotations

import json

import pytest

from support.audit_memo import AuditMemo, setup_key, site_file

URL = "http://127.0.0.1:8000/"
RESULT = {"state": {"theme": "light", "figures": []}, "findings": [{"id": "region", "impact": "moderate", "nodes": []}]}


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    (root / "notebooks").mkdir(parents=True)
    (root / "_static").mkdir()
    (root / "notebooks" / "01.html").write_text("<p>lesson</p>")
    (root / "_static" / "theme.css").write_text("p { color: #222 }")
    (root / "_static" / "logo.svg").write_text("<svg/>")
    return root


LOADED = [URL + "notebooks/01.html", URL + "_static/theme.css?v=1f2e", URL + "_static/logo.svg",
          "data:image/png;base64,AAAA"]


def _kept(site, tmp_path, requested=LOADED, **kwargs) -> AuditMemo:
    memo = AuditMemo(site, URL, "k1", root=tmp_path / "memo", fresh=False)
    assert memo.recall("notebooks/01.html") is None
    memo.keep("notebooks/01.html", requested, RESULT)
    memo.save()
    return AuditMemo(site, URL, "k1", root=tmp_path / "memo", **{"fresh": False, **kwargs})


def test_the_same_bytes_give_the_kept_findings(site, tmp_path):
    again = _kept(site, tmp_path)
    assert again.recall("notebooks/01.html") == RESULT
    assert again.reused == ["notebooks/01.html"] and "1 reused" in again.summary()


@pytest.mark.parametrize("changed", ["notebooks/01.html", "_static/theme.css", "_static/logo.svg"])
def test_one_byte_changed_in_any_file_the_page_loaded_audits_it_again(site, tmp_path, changed):
    again = _kept(site, tmp_path)
    path = site / changed
    path.write_bytes(path.read_bytes() + b" ")
    assert again.recall("notebooks/01.html") is None


def test_a_file_the_page_loaded_gone_audits_it_again(site, tmp_path):
    again = _kept(site, tmp_path)
    (site / "_static" / "logo.svg").unlink()
    assert again.recall("notebooks/01.html") is None


def test_a_page_that_asked_outside_the_site_is_never_kept(site, tmp_path):
    again = _kept(site, tmp_path, requested=[*LOADED, "https://cdn.example.org/mathjax.js"])
    assert again.recall("notebooks/01.html") is None
    again = _kept(site, tmp_path, requested=[*LOADED, URL + "../../etc/passwd"])
    assert again.recall("notebooks/01.html") is None


def test_a_file_that_was_missing_must_still_be_missing(site, tmp_path):
    """axe asks for ``basic.css`` at the root (a 404): the same findings only while it is still not there."""
    again = _kept(site, tmp_path, requested=[*LOADED, URL + "basic.css"])
    assert again.recall("notebooks/01.html") == RESULT
    (site / "basic.css").write_text("p { color: #eee }")
    assert AuditMemo(site, URL, "k1", root=tmp_path / "memo", fresh=False).recall("notebooks/01.html") is None


def test_another_setup_or_fresh_audits_every_page(site, tmp_path, monkeypatch):
    _kept(site, tmp_path)
    assert AuditMemo(site, URL, "k2", root=tmp_path / "memo", fresh=False).recall("notebooks/01.html") is None
    assert AuditMemo(site, URL, "k1", root=tmp_path / "memo", fresh=True).recall("notebooks/01.html") is None
    monkeypatch.setenv("RAGCOURSE_SITE_AUDIT", "fresh")
    assert AuditMemo(site, URL, "k1", root=tmp_path / "memo").recall("notebooks/01.html") is None
    monkeypatch.setenv("RAGCOURSE_SITE_AUDIT", "yes")
    with pytest.raises(ValueError, match="RAGCOURSE_SITE_AUDIT must be 'fresh' or unset; got 'yes'"):
        AuditMemo(site, URL, "k1", root=tmp_path / "memo")


def test_the_setup_key_follows_every_part():
    base = dict(axe="a", run="r", state="s", marker="m", chromium="156", viewport={"width": 1400}, mode="light")
    keys = {setup_key(**{**base, name: "other"}) for name in base}
    assert setup_key(**base) not in keys and len(keys) == len(base)


def test_a_damaged_memo_is_a_miss_and_is_written_whole_again(site, tmp_path):
    memo_dir = tmp_path / "memo"
    memo_dir.mkdir()
    (memo_dir / "k1.json").write_text('{"pages": ')
    memo = AuditMemo(site, URL, "k1", root=memo_dir, fresh=False)
    assert memo.recall("notebooks/01.html") is None
    memo.keep("notebooks/01.html", LOADED, RESULT)
    memo.save()
    assert json.loads((memo_dir / "k1.json").read_text())["pages"]["notebooks/01.html"]["result"] == RESULT
    assert [p.name for p in memo_dir.iterdir()] == ["k1.json"]


def test_urls_name_files_of_the_site_only(site):
    assert site_file(site, URL, URL + "_static/theme.css?v=9#x") == "_static/theme.css"
    assert site_file(site, URL, URL + "notebooks/") == "notebooks/index.html"   # not there: must stay so
    assert site_file(site, URL, URL + "../../etc/passwd") is None
    assert site_file(site, URL, "http://127.0.0.1:9/_static/theme.css") is None
    assert site_file(site, URL, "data:text/plain,x") == ""
