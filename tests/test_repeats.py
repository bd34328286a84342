from captioner.asr.moonshine.repeats import collapse_repeats


def test_word_loop_collapses():
    assert collapse_repeats("Please please please please please call me") == "Please call me"


def test_phrase_loop_collapses():
    assert collapse_repeats("thank you thank you thank you thank you thank you.") == "thank you"


def test_short_runs_survive():
    assert collapse_repeats("no, no, no, that is wrong") == "no, no, no, that is wrong"
    assert collapse_repeats("very very good") == "very very good"


def test_cjk_without_spaces_unchanged():
    assert collapse_repeats("好好好好好好") == "好好好好好好"


def test_unchanged_text_keeps_spacing():
    assert collapse_repeats("  The quick  brown fox ") == "  The quick  brown fox "
