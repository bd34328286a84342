"""The caption engine: streaming sessions stepped through one shared, batched model.

- ``batcher``: ``BatchEngine``, one worker thread per loaded backend, up to B sessions per call.
- ``session``: ``StreamingSession`` (start/feed/end, overlap and flush rules).
- ``rounds``: ``feed_many``, several sessions fed from one thread so their chunks share model calls.
- ``readahead``: ``ReadAhead``, a file's chunks decoded ahead of the turn detection of the previous ones.
- ``live``: ``LiveCaptioner``, sources -> sessions on capture/decode threads, events out (no Qt);
  ``live_capture`` its capture thread, ``live_stats`` its statistics.
- ``lanes``: ``Lane``, a live source's session, meter and queue of captured audio waiting for the decoder.
- ``sound_captions``: ``SoundOptions`` (``--sounds on|off``) and each session's sound detector
  (``SoundModels``/``SoundTracker``, issue 49), loaded beside the speech model without holding it up.
- ``too_slow``: ``TooSlow``, when a live run tells the user once that the model cannot keep up.
- ``run_setup``: ``EngineConfig``/``SourceSpec`` and the factories that build a run's backend, sources, pipeline.
- ``error_text``: ``describe_error``, the message and code a failed run shows the user.
- ``qt_worker``: ``EngineWorker``, the engine on a QThread; ``qt_controller``: ``EngineController``, its
  GUI-side handle (QtCore only).
"""
