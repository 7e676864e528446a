"""What ``sse-tool render`` is made of, below its command-line edge.

* ``draft``: channel records in, the aggregate of one attempt out (answer, reasoning,
  tool calls, usage, metadata, when thinking started and stopped);
* ``release``: how much of a growing answer may leave into a pipe (delta, sentence,
  complete);
* ``view_plain``: the answer as plain text on stdout, appended suffix by suffix;
* ``view_terminal``: the answer for a person on a terminal, drawn with rich;
* ``persist``: atomic file writes for ``--output`` and ``--output-json``;
* ``throttle``: the painter, which decides *when* a view paints (at most once per
  interval, whatever the rate of deltas); the views decide *what* it looks like;
* ``loop``: the select()-driven read loop that feeds the painter and wakes it on time.

Nothing here imports rich except ``view_terminal``, so ``render`` into a pipe starts fast.
"""
