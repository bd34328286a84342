"""Writing a saved file safely: UTF-8, atomically for files, in place for pipes and devices.

The bytes go to a temporary file beside the real target (symlinks are followed), are
fsynced, and then replace it with ``os.replace``, so a full disk or a crash never leaves
half a file over a good one; an existing file keeps its permissions. Named pipes, devices
and ``/dev/stdout`` are written in place, as a shell redirection would. A failure raises
:class:`TranscriptWriteError`, whose message names the file, says why in words and what to
do instead. :mod:`captioner.transcript.writers` saves every transcript format through
:func:`write_text_atomic`; a caller that composed the text itself calls it directly.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path


class TranscriptWriteError(RuntimeError):
    """A transcript file could not be written. The message names the file and the fix.

    Attributes:
        path: the target file.
        errno: the OS error number or None.
    """

    def __init__(self, message: str, path: str | os.PathLike, err: int | None = None):
        super().__init__(message)
        self.path = Path(path)
        self.errno = err


def _explain(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC or exc.errno == getattr(errno, "EDQUOT", -1):
        return "the disk is full. Free some space or save to another drive"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "permission denied (read-only, or the file is open in another program). Choose another folder or close that program"
    if exc.errno == errno.ENOTDIR:
        return "part of the path is a file, not a folder. Choose an existing folder"
    if exc.errno == errno.ENOENT:
        return "the folder does not exist. Choose an existing folder"
    if exc.errno == errno.EISDIR:
        return "that is a folder. Choose a file name"
    return f"{exc.strerror or exc}. Try another folder"


def resolve_output(path: str | os.PathLike) -> tuple[Path, bool]:
    """Where a transcript for ``path`` really goes, and whether it is written in place.

    - A symlink (also one whose target does not exist yet) is followed to its real
      target, so ``notes.srt -> ~/Sync/notes.srt`` updates the synced file and keeps the link.
    - A FIFO, a character/block device or a socket (``/dev/full``, a named pipe,
      ``/dev/stdout`` on a terminal or pipe), and anything under ``/dev`` or ``/proc``
      (``/dev/stdout`` redirected to a file, ``/dev/fd/N``), is written *in place*: opened
      and written like a shell redirection, never replaced by a regular file.
    - Everything else is a regular file written atomically beside itself.

    Returns:
        ``(target, in_place)``: the path to write and True for an in-place write.
    """
    given = Path(path)
    absolute = Path(os.path.abspath(given))
    if absolute.parts[1:2] in (("dev",), ("proc",)):
        return given, True
    try:
        st = os.stat(given)  # follows symlinks
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        return given, True
    if given.is_symlink():
        return Path(os.path.realpath(given)), False
    return given, False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_in_place(target: Path, data: bytes) -> None:
    """Write ``data`` to an existing pipe, device or /dev path as a shell redirection would."""
    fd = os.open(target, os.O_WRONLY | os.O_TRUNC if target.is_file() else os.O_WRONLY)
    try:
        _write_all(fd, data)
        try:
            os.fsync(fd)
        except OSError as exc:  # pipes, terminals and most devices cannot be fsynced
            if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EROFS, errno.EBADF):
                raise
    finally:
        os.close(fd)


def _write_atomic(target: Path, data: bytes) -> None:
    """Temp file beside ``target`` + fsync + ``os.replace``; keeps an existing file's mode."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mode = None
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    fd = None
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        _write_all(fd, data)
        os.fsync(fd)
        os.close(fd)
        fd = None
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` as UTF-8 to ``path``: atomically for files, in place for pipes and devices.

    A regular file gets a temporary file beside it, fsynced, then ``os.replace``: a full
    disk or a crash never leaves half a file over a good one, and an existing file keeps
    its permissions. A symlink is followed and its real target is replaced atomically
    (the link stays a link). Named pipes, devices and ``/dev/stdout``-style paths are
    written directly (see :func:`resolve_output`).

    Returns:
        The path written (the symlink's real target when ``path`` is a symlink).

    Raises:
        TranscriptWriteError: the folder is missing or read-only, the disk is full
            (also ``/dev/full``), or the target is a folder. An old file is untouched.
    """
    given = Path(path)
    data = text.encode("utf-8")
    target = given
    try:
        if given.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(given))
        target, in_place = resolve_output(given)
        if in_place:
            _write_in_place(target, data)
        else:
            _write_atomic(target, data)
    except OSError as exc:
        raise TranscriptWriteError(
            f"Could not save the transcript to {given}: {_explain(exc)}. "
            "Nothing was lost: every word is in the autosave journal.",
            given,
            exc.errno,
        ) from exc
    return target


__all__ = [
    "TranscriptWriteError",
    "resolve_output",
    "write_text_atomic",
]
