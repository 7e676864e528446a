"""Session-wide settings for the tests."""

import signal

# A shell starts a background job (`pytest &` in a script) with Ctrl-C ignored, and an
# ignored signal stays ignored in every process started from it: the stages the tests
# interrupt would never see their SIGINT. Python's own handler here is reset to the
# default in each child, as in a suite started from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
