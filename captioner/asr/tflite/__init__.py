"""TFLite backend for TensorFlowASR streaming exports (``tensorflow_asr tflite``; DESIGN section 3).

The backend (:class:`~captioner.asr.base.Backend`) is :class:`captioner.asr.tflite.backend.TFLiteBackend`;
:func:`captioner.asr.load_backend` loads it for ``--backend tflite``
(:func:`captioner.asr.tflite.backend.load_tflite_backend`). Modules: ``errors`` (how a file is
refused), ``signature`` (the inputs and outputs in order, the carried states paired), ``meta``
(what an export says about itself, read from the flatbuffer without running it), ``runtime``
(choosing and creating the interpreter), ``backend`` (the backend).

Importing this package imports nothing else (no TensorFlow, no LiteRT).
"""
