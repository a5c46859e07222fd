"""Files and folders written whole or not at all (renamed into place), with the umask's permissions."""
from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import threading
from pathlib import Path
from typing import Dict, Iterator, List, Union

PathLike = Union[str, Path]


def temporary_name(path: PathLike) -> Path:
    """A hidden name beside ``path``, unique to this process and call: ``.NAME.PID.RANDOM.tmp``."""
    path = Path(path)
    return path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"


def _write_new(path: Path, data: bytes) -> None:
    """Create ``path`` (which must not exist) holding ``data``, mode 0666 less the umask."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())           # on disk before the rename that makes it visible


def write_atomic(path: PathLike, data: bytes) -> None:
    _write_replacing({Path(path): data})


def _write_replacing(files: Dict[Path, bytes]) -> None:
    """Write each file beside its path, then rename them all into place (Ctrl-C held back): all or none."""
    written: Dict[Path, Path] = {}
    try:
        for final, data in files.items():
            tmp = temporary_name(final)
            written[tmp] = final
            _write_new(tmp, data)
        with interrupts_deferred():
            for tmp, final in written.items():
                os.replace(tmp, final)
    except BaseException:
        for tmp in written:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold Ctrl-C back until the block ends, then raise it (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: List[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
    if received and previous is not signal.SIG_IGN:
        raise KeyboardInterrupt


def write_folder(path: PathLike, files: Dict[str, bytes]) -> Path:
    """Write ``files`` (the one that marks the folder complete last) into folder ``path``, whole or not at all."""
    path = Path(path)
    if path.is_dir():
        _write_replacing({path / name: data for name, data in files.items()})
        return path
    created = [p for p in (path.parent, *path.parent.parents) if not p.exists()]     # deepest first
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(path)
    try:
        tmp.mkdir()
        for name, data in files.items():
            _write_new(tmp / name, data)
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for p in created:
            with contextlib.suppress(OSError):
                p.rmdir()
        raise
    return path


def check_creatable(path: PathLike, what: str) -> Path:
    """Check before long work that ``path`` can be written; NotADirectoryError or PermissionError naming ``what``."""
    path = Path(path)
    existing = (path if path.is_dir() else path.parent).absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise NotADirectoryError(f"cannot write {what} {path}: {existing} is a file, not a folder; give a path "
                                 "in a folder")
    probe = temporary_name(existing / path.name)
    try:
        probe.mkdir()
    except OSError as e:
        raise PermissionError(f"cannot write {what} {path}: cannot create files in {existing} ({e.strerror}); "
                              "give a path in a folder you can write to") from None
    probe.rmdir()
    return path
