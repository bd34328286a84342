"""Audio in: every source becomes mono float32 blocks at the model rate with exact stream time.

- ``source``: the ``AudioSource`` interface and ``AudioBlock``; bounded, non-blocking capture queue.
- ``edge``: streaming downmix (all channels) + soxr resampling at the edge, sample-exact.
- ``devices``: microphones and system-audio (monitor/loopback) sources per OS.
- ``microphone`` / ``system`` / ``filesource``: the three kinds of source.
- ``watchdog``: device-lost detection; ``levels``: RMS/peak dBFS for level meters.
- ``fileio``: whole-file reading (soundfile) for ``captioner transcribe``.
"""
