"""The resend buffer: audio queued for the server and audio it has not transcribed yet (no I/O).

A reconnect opens a new server session with fresh model state (DESIGN section 2: "no
resume"). The server's text of a step comes one delay after that step's audio (so the last
delay of audio sent is untranscribed at a cut), a fresh session starts without context, and a
word whose audio began before the cut cannot be recognised from its tail alone. So after a
reconnect :meth:`ResendBuffer.rewind` puts back, in front of the
queue, the real audio from ``overlap`` samples before the first untranscribed sample (and
never later than the start of the word still open there); the generation then drops what it
says about audio that was already transcribed (``captioner.asr.remote.generation``).

Not thread-safe by itself: :class:`~captioner.asr.remote.stream.RemoteStream` holds its lock.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass


@dataclass
class Piece:
    """PCM16 audio for one append. ``stream_pos`` None = keep-alive silence (never resent).

    Attributes:
        pcm: little-endian PCM16 mono 16 kHz bytes.
        stream_pos: stream sample of its first sample, or None.
        pushed_at: ``time.perf_counter()`` when the caller pushed it (client latency).
        gen_start: generation sample where it was sent (set by the sender).
    """

    pcm: bytes
    stream_pos: int | None
    pushed_at: float = 0.0
    gen_start: int = 0

    @property
    def samples(self) -> int:
        """Samples in ``pcm`` (2 bytes each)."""
        return len(self.pcm) // 2

    def tail(self, stream_pos: int) -> "Piece":
        """The part of this real piece from ``stream_pos`` on."""
        assert self.stream_pos is not None
        skip = max(0, stream_pos - self.stream_pos)
        return Piece(self.pcm[2 * skip:], self.stream_pos + skip, self.pushed_at)


class ResendBuffer:
    """Unsent audio (``out``) and sent real audio kept for a resend (``sent``), in stream order.

    Args:
        keep_samples: most sent audio kept beyond what the server transcribed (bounds memory).

    Attributes:
        out: pieces waiting to be sent.
        out_samples: samples in ``out``.
        overlap_samples: samples at the head of ``out`` that the server had transcribed
            already (sent again for context, so they do not count against an outage buffer).
        sent: real pieces sent on the current connection, oldest first, trimmed by :meth:`confirm`.
        transcribed: stream sample up to which the server sent tokens (the seam of a reconnect).
    """

    def __init__(self, keep_samples: int) -> None:
        self.keep_samples = int(keep_samples)
        self.out: collections.deque[Piece] = collections.deque()
        self.out_samples = 0
        self.overlap_samples = 0
        self.sent: collections.deque[Piece] = collections.deque()
        self.transcribed = 0

    def queue(self, piece: Piece) -> None:
        """Append ``piece`` to the audio waiting to be sent."""
        self.out.append(piece)
        self.out_samples += piece.samples

    def pop(self) -> Piece | None:
        """The next piece to send (None when the queue is empty)."""
        if not self.out:
            return None
        piece = self.out.popleft()
        self.out_samples -= piece.samples
        self.overlap_samples = max(0, self.overlap_samples - piece.samples)
        return piece

    def mark_sent(self, piece: Piece) -> None:
        """Keep a sent real piece for a resend (keep-alive silence is never resent)."""
        if piece.stream_pos is not None:
            self.sent.append(piece)

    def confirm(self, stream_pos: int) -> None:
        """The server sent tokens for the stream up to ``stream_pos``: keep only what a resend
        may still need (``keep_samples`` before that point)."""
        self.transcribed = max(self.transcribed, int(stream_pos))
        floor = self.transcribed - self.keep_samples
        while self.sent and self.sent[0].stream_pos + self.sent[0].samples <= floor:
            self.sent.popleft()

    def rewind(self, overlap: int, open_word_pos: int | None = None) -> tuple[int, int]:
        """Put sent audio back in front of the queue for a new session.

        Args:
            overlap: samples before the first untranscribed sample to send again (context
                for the new session: the delay plus look-ahead, in whole steps).
            open_word_pos: stream sample where the last word said before the cut began, or
                None; the resend starts no later than it.

        Returns:
            ``(resend_from, seam)``: the first stream sample sent again, and the first one the
            old session had not transcribed (text about audio before it is already out).
        """
        seam = self.transcribed
        start = seam - int(overlap)
        if open_word_pos is not None:
            start = min(start, int(open_word_pos))
        start = max(0, start)
        back = [p for p in self.sent if p.stream_pos + p.samples > start]
        self.sent.clear()
        pieces = [p.tail(start) if p.stream_pos < start else p for p in back]
        for p in reversed(pieces):
            self.out.appendleft(p)
            self.out_samples += p.samples
        if pieces:
            self.overlap_samples = max(0, seam - pieces[0].stream_pos)
            return pieces[0].stream_pos, seam
        first = next((p.stream_pos for p in self.out if p.stream_pos is not None), None)
        return (seam if first is None else first), seam
