"""Audio in: every source becomes mono float32 blocks at the model rate with exact stream time.

- ``source``: the ``AudioSource`` interface and ``AudioBlock``; bounded, non-blocking capture queue.
- ``edge``: streaming downmix (all channels) + soxr resampling at the edge, sample-exact.
- ``devices``: microphones and system-audio (monitor/loopback) sources per OS; ``device_info``
  the ``InputDevice`` record, ``pulse`` the sound server's inventory, ``portaudio`` PortAudio access.
- ``microphone`` / ``system`` / ``filesource``: the three kinds of source; ``device_source`` the
  PortAudio stream behind the first two.
- ``recovery`` + ``pulse_watch``: a sound-server stream supervises itself (stall vs. gone, resume,
  moved streams, following the default output, reconnecting); ``abandon``: audio-library calls
  that may block run on threads that can be given up; ``libnoise``: library stderr lines to the log.
- ``watchdog``: device-lost detection; ``levels``: RMS/peak dBFS for level meters.
- ``fileio``: whole-file reading (soundfile) for ``captioner transcribe``.
"""
