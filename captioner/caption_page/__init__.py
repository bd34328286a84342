"""The live caption page: captioner serves its captions to browsers (OBS browser sources, phones).

- :mod:`.hub`: the session's caption operations with sequence numbers (Qt-free, thread-safe);
- :mod:`.appearance`: the page's query parameters, checked against allow-lists;
- :mod:`.address`: where it listens, its URLs, the Host-header rule;
- :mod:`.server`: the aiohttp server on its own thread and asyncio loop (Server-Sent Events).

The page itself is static: ``resources/caption-page.{html,js,css}`` and ``caption-transcript.html``.
Nothing here imports Qt, torch or onnxruntime; :mod:`aiohttp` is imported only when a server starts.
"""
