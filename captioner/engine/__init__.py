"""The caption engine: streaming sessions stepped through one shared, batched model.

- ``batcher``: ``BatchEngine``, one worker thread per loaded backend, up to B sessions per call.
- ``session``: ``StreamingSession`` (start/feed/end, overlap and flush rules).
- ``rounds``: ``feed_many``, several sessions fed from one thread so their chunks share model calls.
- ``readahead``: ``ReadAhead``, a file's chunks decoded ahead of the turn detection of the previous ones.
- ``live``: ``LiveCaptioner``, sources -> sessions on capture/decode threads, events out (no Qt).
- ``qt_worker``: the QThread wrapper the GUI uses (QtCore only).
"""
