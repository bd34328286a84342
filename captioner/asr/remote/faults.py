"""The three kinds of fault of a remote stream, each raised as its own exception.

* :class:`Transient` -- the connection is gone, stalled or repeatedly garbled: the stream
  reconnects with backoff as a new session (:class:`Stalled` when nothing arrived);
* :class:`Fatal` -- the server refused the session for good (key, model name, redirect,
  404, TLS trust, a busy server): the message is for the user;
* :class:`EndedWithoutDone` -- after the final commit the server went quiet without
  ``transcription.done``: the stream finishes with the text it has, no reconnect.

Below the connection (:mod:`~captioner.asr.remote.connection`) and a generation's events
(:mod:`~captioner.asr.remote.generation`), which raise them, and the session loop
(:mod:`~captioner.asr.remote.session`), which handles them.
"""

from __future__ import annotations


class Transient(Exception):
    """The connection is gone, stalled or garbled: reconnect."""


class Stalled(Transient):
    """Nothing arrived for the stall timeout while audio waited for its tokens."""


class Fatal(Exception):
    """Give up: the message is for the user."""


class EndedWithoutDone(Exception):
    """After the final commit the server stayed quiet without ``transcription.done``."""
