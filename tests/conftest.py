"""Suite-wide set-up: signals as a terminal gives them.

A suite started as a background job (``cmd &`` in a script, some CI runners) inherits SIGINT
ignored, and Python then leaves it ignored: the tests that press Ctrl-C (``os.kill`` of SIGINT
to this process, or to a child that inherits the ignore) would wait forever for a stop that
never comes. ``listen`` keeps an inherited ignore on purpose (``nohup`` semantics, see
``test_stop_requests_keep_an_inherited_ignore``), so the suite restores Python's own Ctrl-C
handler here; children then start with the default action. SIGHUP is left as inherited (a
``nohup``-started suite should survive its terminal): the tests that send it reset it in their
child.
"""

import signal


def pytest_configure(config):
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
