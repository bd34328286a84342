"""The built-in default model: Moonshine base-en on ONNX Runtime, offline on a CPU (DESIGN section 4).

The backend (:class:`~captioner.asr.base.Backend`) is :class:`captioner.asr.moonshine.backend.MoonshineBackend`;
:func:`captioner.asr.load_backend` loads it for ``--backend default``. Modules, by concept:

- the model: ``files`` (where the shipped files are), ``prepare`` (the one-time fast ONNX form,
  ``python -m captioner.asr.moonshine.prepare``), ``int8`` (the 8-bit decoder), ``ort_options``
  (ONNX Runtime session options), ``tokenizer`` (``tokenizer.bin``), ``model`` (encoder and
  greedy decoder), ``draft_tokens`` (drafted decoding);
- hotwords: ``hotwords`` (shallow fusion), ``hotword_speculation``, ``hotword_respell``;
- lines: ``lines`` (cutting a stream into lines with the VAD), ``line_framing`` (a completed line's
  final text from its framings), ``framings`` (the framings' geometry and the choice of the surest
  reading), ``line_pool`` (a file's lines read on two cores), ``repeats``;
- partials: ``partials`` (re-decodes of the open line), ``partial_worker`` (their thread),
  ``agreement`` (LocalAgreement), ``steady_tail`` (what of a re-decode is shown);
- ``line_state`` (one session's state), ``backend`` (the backend).

Importing this package imports nothing else (no onnxruntime, no numpy).
"""
