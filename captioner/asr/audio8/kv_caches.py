"""The KV caches of the Audio8 streaming step: per-session buffers, shared static pools, the batch views.

Both attention stacks (the audio tower and the decoder) keep their keys and values here; the
cache objects are what transformers attention modules call (``update(k, v, layer_idx)``).
``StreamingDecoder(cache=...)`` (:mod:`captioner.asr.audio8.streaming`) chooses:

* ``"static"``: one pre-allocated :class:`KVPool` per attention stack, ``[layers, slots,
  kv_heads, capacity, head_dim]``; a session owns one row (:class:`KVSlot`); a call's rows attend
  through :class:`PooledKV`;
* ``"per_session"``: private :class:`KVStore` buffers per session that each call stacks
  (:class:`BatchedKV`).

Trimming (:meth:`KVStore.drop_front`) and re-basing RoPE positions (:meth:`KVStore.rotate`) work
in place on a session's entries.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

import torch
from transformers.models.voxtral_realtime.modeling_voxtral_realtime import rotate_half


class KVStore:
    """Keys and values of one session for one attention stack, preallocated.

    Attributes:
        keys, values: ``[layers, kv_heads, capacity, head_dim]`` in the model dtype; entries
            ``[:, :, :length]`` are valid; buffer index == RoPE position.
        length: valid positions.
    """

    def __init__(self, layers: int, kv_heads: int, head_dim: int, capacity: int, device: torch.device,
                 dtype: torch.dtype) -> None:
        self.keys = torch.zeros(layers, kv_heads, capacity, head_dim, device=device, dtype=dtype)
        self.values = torch.zeros_like(self.keys)
        self.length = 0

    @property
    def capacity(self) -> int:
        """Positions the buffer holds."""
        return int(self.keys.shape[2])

    slot = -1  # not a pool row

    def drop_front(self, count: int) -> None:
        """Forget the oldest ``count`` positions, moving the rest to the front."""
        if count <= 0:
            return
        keep = self.length - count
        self.keys[:, :, :keep] = self.keys[:, :, count : self.length].clone()
        self.values[:, :, :keep] = self.values[:, :, count : self.length].clone()
        self.length = keep

    def rotate(self, shift: int, rotary: Any) -> None:
        """Re-base RoPE positions of the valid keys by ``-shift`` (exact: R(p - s) = R(-s) R(p)).

        Args:
            shift: positions to subtract.
            rotary: the stack's rotary-embedding module (gives cos/sin for a position).
        """
        if shift == 0 or self.length == 0:
            return
        k = self.keys[:, :, : self.length].float()
        pos = torch.full((1, 1), -int(shift), dtype=torch.long, device=k.device)
        cos, sin = rotary(k, position_ids=pos)  # [1, 1, head_dim] float32
        self.keys[:, :, : self.length] = (k * cos + rotate_half(k) * sin).to(self.keys.dtype)


class BatchedKV:
    """The cache protocol transformers attention modules call (``update(k, v, layer_idx)``),
    spread over one :class:`KVStore` per batch row.

    New keys of row ``b`` go to ``store.keys[layer, :, length_b : length_b + T]``; the call
    returns all rows stacked up to ``max(length) + T`` (stale tails are masked out).
    """

    def __init__(self, stores: Sequence[KVStore], new_tokens: int) -> None:
        self.stores = list(stores)
        self.t = int(new_tokens)
        self.total = max(s.length for s in self.stores) + self.t

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args: Any,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Store ``[B, kv_heads, T, head_dim]`` keys/values; return ``[B, kv_heads, S, head_dim]``."""
        if len(self.stores) == 1:
            s = self.stores[0]
            s.keys[layer_idx, :, s.length : s.length + self.t] = key_states[0]
            s.values[layer_idx, :, s.length : s.length + self.t] = value_states[0]
            return s.keys[layer_idx, :, : self.total][None], s.values[layer_idx, :, : self.total][None]
        for b, s in enumerate(self.stores):
            s.keys[layer_idx, :, s.length : s.length + self.t] = key_states[b]
            s.values[layer_idx, :, s.length : s.length + self.t] = value_states[b]
        keys = torch.stack([s.keys[layer_idx, :, : self.total] for s in self.stores])
        values = torch.stack([s.values[layer_idx, :, : self.total] for s in self.stores])
        return keys, values

    def commit(self) -> None:
        """Advance every row's length by the new tokens (after the forward)."""
        for s in self.stores:
            s.length += self.t

    def positions(self, device: torch.device) -> torch.Tensor:
        """``[B, T]`` int64 RoPE positions of the new tokens (buffer indices)."""
        base = torch.tensor([s.length for s in self.stores], device=device, dtype=torch.long)
        return base[:, None] + torch.arange(self.t, device=device, dtype=torch.long)[None, :]

    def mask(self, device: torch.device, sliding_window: int | None = None) -> torch.Tensor:
        """Bool ``[B, 1, T, S]`` mask, True where query ``t`` of row ``b`` may attend key ``j``:
        ``j <= length_b + t`` (causal, own history only) and, with a sliding window ``w``,
        ``j > length_b + t - w``."""
        q = self.positions(device)[:, None, :, None]  # [B, 1, T, 1]
        j = torch.arange(self.total, device=device)[None, None, None, :]
        allowed = j <= q
        if sliding_window is not None:
            allowed = allowed & (j > q - int(sliding_window))
        return allowed


def move_front(t: torch.Tensor, dim: int, count: int, length: int) -> None:
    """Move ``t[..., count:length, ...]`` (along ``dim``) to the front, in place and without a
    temporary: copied in pieces of at most ``count`` positions, so no piece overlaps its source."""
    if count <= 0:
        return
    start = count
    while start < length:
        n = min(count, length - start)
        t.narrow(dim, start - count, n).copy_(t.narrow(dim, start, n))
        start += n


class KVPool:
    """The static cache of one attention stack, shared by every session of a decoder.

    One pre-allocated pair of tensors ``keys``/``values`` ``[layers, slots, kv_heads, capacity,
    head_dim]`` in the model dtype; each session owns one slot (batch row) for its lifetime and
    writes its keys at buffer index == RoPE position. Sessions stepping together in slot order
    ``a, a + 1, ...`` attend straight from a view of the pool (no gather); the rolling window and
    the tower re-base shift a slot in place, so the tensors and their addresses never change
    while at most ``slots`` sessions exist. A further session grows the pool (doubling, a copy:
    the only allocation after start-up, counted in ``grows``).

    Attributes:
        keys, values: ``[layers, slots, kv_heads, capacity, head_dim]``.
        grows: how often the pool had to grow.
    """

    def __init__(self, layers: int, kv_heads: int, head_dim: int, capacity: int, slots: int,
                 device: torch.device, dtype: torch.dtype) -> None:
        shape = (int(layers), max(1, int(slots)), int(kv_heads), int(capacity), int(head_dim))
        self.keys = torch.zeros(shape, device=device, dtype=dtype)
        self.values = torch.zeros_like(self.keys)
        self._free = list(range(shape[1]))
        self.grows = 0
        # release() runs from weakref finalizers: in whatever thread drops a state, or inside
        # acquire() when an allocation there triggers the garbage collector (hence re-entrant)
        self._lock = threading.RLock()

    @property
    def slots(self) -> int:
        """Rows the pool holds."""
        return int(self.keys.shape[1])

    @property
    def capacity(self) -> int:
        """Positions per slot."""
        return int(self.keys.shape[3])

    def acquire(self) -> int:
        """The lowest free slot (growing the pool when none is free)."""
        with self._lock:
            if not self._free:
                old = self.slots
                grow = lambda t: torch.cat([t, torch.zeros_like(t)], dim=1)  # noqa: E731
                self.keys, self.values = grow(self.keys), grow(self.values)
                self._free.extend(range(old, 2 * old))
                self.grows += 1
            slot = min(self._free)
            self._free.remove(slot)
            return slot

    def release(self, slot: int) -> None:
        """Give ``slot`` back (its contents are left as they are: lengths live in the handles)."""
        with self._lock:
            if slot not in self._free:
                self._free.append(int(slot))

    @property
    def in_use(self) -> int:
        """Slots held by sessions."""
        return self.slots - len(self._free)


class KVSlot:
    """One session's row of a :class:`KVPool`; the same interface as :class:`KVStore`.

    Attributes:
        pool: the shared pool.
        slot: the row index.
        length: valid positions of this session (``[:, slot, :, :length]``).
    """

    def __init__(self, pool: KVPool, slot: int) -> None:
        self.pool = pool
        self.slot = int(slot)
        self.length = 0

    @property
    def keys(self) -> torch.Tensor:
        """``[layers, kv_heads, capacity, head_dim]`` view of the slot."""
        return self.pool.keys[:, self.slot]

    @property
    def values(self) -> torch.Tensor:
        """``[layers, kv_heads, capacity, head_dim]`` view of the slot."""
        return self.pool.values[:, self.slot]

    @property
    def capacity(self) -> int:
        """Positions the slot holds."""
        return self.pool.capacity

    def drop_front(self, count: int) -> None:
        """Forget the oldest ``count`` positions, moving the rest to the front in place."""
        if count <= 0:
            return
        for t in (self.pool.keys, self.pool.values):
            move_front(t.select(1, self.slot), 2, count, self.length)
        self.length -= count

    def rotate(self, shift: int, rotary: Any) -> None:
        """Re-base RoPE positions of the valid keys by ``-shift`` (see :meth:`KVStore.rotate`)."""
        if shift == 0 or self.length == 0:
            return
        view = self.pool.keys.select(1, self.slot)[:, :, : self.length]
        k = view.float()
        pos = torch.full((1, 1), -int(shift), dtype=torch.long, device=k.device)
        cos, sin = rotary(k, position_ids=pos)  # [1, 1, head_dim] float32
        view.copy_(k * cos + rotate_half(k) * sin)


class PooledKV:
    """The cache protocol (``update(k, v, layer_idx)``) over slots of one :class:`KVPool`.

    New keys of row ``b`` go to ``pool.keys[layer, slot_b, :, length_b : length_b + T]`` in one
    indexed write per layer. When the rows are consecutive slots ``a, a + 1, ...`` the call
    returns a view ``pool.keys[layer, a : a + B, :, :S]`` (``S = max(length) + T``, or the whole
    capacity with ``full``; stale tails are masked out), else a gather of the rows.
    """

    def __init__(self, stores: Sequence[KVSlot], new_tokens: int, full: bool = False) -> None:
        self.stores = list(stores)
        self.pool = self.stores[0].pool
        if any(s.pool is not self.pool for s in self.stores):
            raise ValueError("rows of one call must share one KV pool")
        self.t = int(new_tokens)
        self.total = self.pool.capacity if full else max(s.length for s in self.stores) + self.t
        slots = [s.slot for s in self.stores]
        self._first = slots[0]
        self._contiguous = slots == list(range(slots[0], slots[0] + len(slots)))
        dev = self.pool.keys.device
        self._slot_idx = torch.tensor(slots, device=dev, dtype=torch.long)
        self._pos = torch.tensor([s.length for s in self.stores], device=dev, dtype=torch.long)[:, None] + \
            torch.arange(self.t, device=dev, dtype=torch.long)[None, :]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args: Any,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Store ``[B, kv_heads, T, head_dim]`` keys/values; return ``[B, kv_heads, S, head_dim]``."""
        out = []
        for pool_t, new in ((self.pool.keys[layer_idx], key_states), (self.pool.values[layer_idx], value_states)):
            if len(self.stores) == 1:
                s = self.stores[0]
                pool_t[s.slot, :, s.length : s.length + self.t] = new[0]
            else:  # [S, H, C, D][slots[:, None], :, pos] is [B, T, H, D]
                pool_t[self._slot_idx[:, None], :, self._pos] = new.transpose(1, 2).to(pool_t.dtype)
            if self._contiguous:
                out.append(pool_t[self._first : self._first + len(self.stores), :, : self.total])
            else:
                out.append(pool_t[:, :, : self.total].index_select(0, self._slot_idx))
        return out[0], out[1]

    def commit(self) -> None:
        """Advance every row's length by the new tokens (after the forward)."""
        for s in self.stores:
            s.length += self.t

    def positions(self, device: torch.device) -> torch.Tensor:
        """``[B, T]`` int64 RoPE positions of the new tokens (buffer indices)."""
        return self._pos.to(device)

    def mask(self, device: torch.device, sliding_window: int | None = None) -> torch.Tensor:
        """Bool ``[B, 1, T, S]`` mask (the rule of :meth:`BatchedKV.mask`)."""
        q = self._pos.to(device)[:, None, :, None]
        j = torch.arange(self.total, device=device)[None, None, None, :]
        allowed = j <= q
        if sliding_window is not None:
            allowed = allowed & (j > q - int(sliding_window))
        return allowed


def kv_cache(stores: Sequence[Any], new_tokens: int, full: bool = False) -> BatchedKV | PooledKV:
    """The cache object for one call: :class:`PooledKV` over pool slots (attending over the whole
    capacity with ``full``), else :class:`BatchedKV`."""
    if isinstance(stores[0], KVSlot):
        return PooledKV(stores, new_tokens, full)
    return BatchedKV(stores, new_tokens)
