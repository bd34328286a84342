"""Who is speaking: speaker attribution on the audio of a source, behind every backend (issue 38).

* :mod:`~captioner.speakers.options` -- what the user chose (``--speakers auto|off|N``,
  Settings) and which sources it applies to;
* :mod:`~captioner.speakers.encoder` -- the GE2E voice encoder that ships inside the
  ``resemblyzer`` wheel, run on onnxruntime from a graph prepared once from that file;
* :mod:`~captioner.speakers.clustering` -- online clustering of voice embeddings into
  "Speaker 1", "Speaker 2", ...;
* :mod:`~captioner.speakers.tracker` -- one source's audio history and the labelling
  (and splitting at a change of voice) of its final text.

Nothing here imports Qt; the session (:class:`captioner.engine.session.StreamingSession`)
calls the tracker.
"""
