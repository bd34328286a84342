"""Generation sample position -> stream sample position, for one server generation (no I/O).

The server's only clock is the count of ``transcription.delta`` events. The reference schedule
(``Audio8RealtimeAudioTokenBuffer`` in ``audio8_streaming_asr_realtime.py``: the prompt and a
32-step left pad of silence are prefilled, the first token comes from the last pad position,
then one window per 80 ms step) sends delta ``j`` (0-based) as soon as it holds ``j`` steps
of the generation's audio plus the 2.5 ms look-ahead, and a delayed-streams model's token
describes the audio one delay (``d = target_delay_ms / 80`` steps) before the audio it was
fed last: delta ``j`` is the text of generation audio step ``j - d``, the first ``d`` deltas
describe the left pad. So a cue time is the step clock minus the delay: delta ``n`` (1-based)
ends at ``(n - d) * 80`` ms of generation audio. What a generation holds is not the stream,
though: keep-alive silence, audio dropped during an outage and the restart point after a
reconnect all sit between them. A
:class:`TimeMap` records, for every span the client sent, where it came from in the stream.
"""

from __future__ import annotations

import bisect


class TimeMap:
    """Spans of one generation: ``(gen_start, stream_start, real)``; keep-alive silence is not real.

    Attributes:
        gen_end: generation samples recorded so far.
        stream_end: stream sample just after the last real sample recorded.
    """

    def __init__(self) -> None:
        self.gen_starts: list[int] = []
        self.spans: list[tuple[int, int, bool]] = []
        self.gen_end = 0
        self.stream_end = 0

    def add(self, n: int, stream_pos: int | None) -> int:
        """Record ``n`` samples sent (``stream_pos`` None = keep-alive silence); returns their
        generation start position."""
        g = self.gen_end
        real = stream_pos is not None
        if not (self.spans and real and self.spans[-1][2] and stream_pos == self.stream_end):
            self.gen_starts.append(g)
            self.spans.append((g, stream_pos if real else self.stream_end, real))
        self.gen_end += n
        if real:
            self.stream_end = stream_pos + n
        return g

    def stream_at(self, g: int) -> int:
        """Stream sample of generation sample ``g`` (silence maps to the real sample before it;
        clipped to the real audio sent)."""
        if not self.spans:
            return self.stream_end
        i = max(0, bisect.bisect_right(self.gen_starts, g) - 1)
        g0, s0, real = self.spans[i]
        if not real:
            return s0
        nxt = self.gen_starts[i + 1] if i + 1 < len(self.gen_starts) else self.gen_end
        return s0 + min(g, nxt) - g0
