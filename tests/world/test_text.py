from ragcourse.world.text import tokenize, trace_id


def test_tokenize_cuts_words_into_five_character_pieces():
    assert tokenize("tier threshold") == ["tier", "thres", "hold"]
    assert tokenize("Calibration record") == ["calib", "ratio", "n", "recor", "d"]
    assert tokenize("which band am i in") == ["which", "band", "am", "i", "in"]


def test_tokenize_keeps_commas_as_tokens_and_ignores_extra_spaces():
    assert tokenize("a,b  c") == ["a", ",", "b", "c"]
    assert tokenize("") == []
    assert tokenize("abcdefghij") == ["abcde", "fghij"]


def test_trace_id_is_fnv1a_32():
    assert trace_id("") == 2166136261
    assert trace_id("a") == 0xE40C292C      # FNV-1a 32-bit test vector
    assert trace_id("foobar") == 0xBF9CF968
    assert trace_id("prompt") == trace_id("prompt") != trace_id("prompt ")
