"""Writing output files safely, and telling outputs from inputs.

One helper for every file this package writes (JSON report, HTML, CSV, parquet, run
journal description, comparison lock):

* :func:`atomic_write` writes into a temporary file with a unique name in the target's
  folder, created with ``O_CREAT | O_EXCL`` (a symbolic link planted at a guessable name is
  never followed), flushed and ``fsync``-ed, then renamed onto the target. A failure at any
  point (full disk, Ctrl-C, a bug) removes the temporary file and leaves whatever was at
  the target before untouched. Two processes writing the same target at once each rename a
  complete file: the last one wins, the file is never a mix.
* :class:`StagedOutputs` reserves one such temporary file per output of a command, lets
  the writers fill them, and renames them all into place only when every writer has
  succeeded.
* :func:`check_outputs` refuses, before any work, two outputs naming one file and an output
  naming an input (compared by resolved path and by inode, so symbolic and hard links are
  caught).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from .errors import InputError, os_refusal

__all__ = [
    "RECENT_CHANGE_NS",
    "StagedOutputs",
    "atomic_write",
    "check_outputs",
    "file_key",
    "is_inside",
    "refuse_unexpanded",
    "same_file",
    "start_writeback",
    "write_atomic",
]


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # not possible on every platform; the data itself is fsync-ed
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def reserve_temp(target: Path) -> Path:
    """Create an empty, uniquely named temporary file beside ``target`` and return its path.

    ``tempfile.mkstemp`` opens with ``O_CREAT | O_EXCL | O_NOFOLLOW``: a name that exists
    (a planted symbolic link included) is never opened, another is drawn.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    # A long non-ASCII name must not push the temporary name past 255 bytes.
    stem = target.name.encode("utf-8", "replace")[:80].decode("utf-8", "ignore")
    fd, name = tempfile.mkstemp(prefix=f".{stem}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp makes the file private (0600); an output gets the usual permissions.
        os.fchmod(fd, 0o666 & ~_umask())
    except OSError:
        pass
    finally:
        os.close(fd)
    return Path(name)


def _umask() -> int:
    global _UMASK
    if _UMASK is None:
        # Reading the umask means setting it; done once, at the first output.
        _UMASK = os.umask(0o022)
        os.umask(_UMASK)
    return _UMASK


_UMASK: int | None = None


def _open_reserved(path: Path, mode: str, **kwargs: Any) -> IO[Any]:
    # The reserved file exists; O_NOFOLLOW refuses it if someone swapped it for a link.
    flags = os.O_WRONLY | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        return open(fd, mode, **kwargs)
    except BaseException:
        os.close(fd)
        raise


def refuse_unexpanded(path: Path) -> None:
    """Refuse an output path that starts with ``~``: Python does not expand it, so
    ``write_json_report(result, "~/reports/r.json")`` made a folder named ``~`` in the
    working directory (one a later ``rm -rf ~`` would not remove alone).

    Examples
    --------
    >>> refuse_unexpanded(Path("reports/r.json"))
    >>> refuse_unexpanded(Path("~/reports/r.json"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: ~/reports/r.json: '~' is not expanded here (pass \
.../reports/r.json, e.g. Path('~/reports/r.json').expanduser())
    """
    if str(path).startswith("~"):
        raise InputError(
            "'~' is not expanded here",
            file=path,
            hint=f"pass {path.expanduser()}, e.g. Path({str(path)!r}).expanduser()",
        )


@contextlib.contextmanager
def atomic_write(
    path: str | Path, mode: str = "wb", *, sync_dir: bool = True, **kwargs: Any
) -> Iterator[IO[Any]]:
    """Open ``path`` for writing so that it is replaced only by a complete file.

    Parameters
    ----------
    path
        The file to write (its folder is created).
    mode
        ``"wb"`` or ``"w"``; ``kwargs`` go to :func:`open` (``encoding``, ``newline``).
    sync_dir
        ``fsync`` the folder after the rename, so that the rename too is on disk when this
        returns. False: the caller does it once for several files of one folder
        (:meth:`~agenticlens_frames.ExperimentRun.to_parquet`'s five tables).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
    >>> with atomic_write(target, "w", encoding="utf-8") as handle:
    ...     _ = handle.write("complete")
    >>> target.read_text(), sorted(p.name for p in target.parent.iterdir())
    ('complete', ['out.txt'])
    >>> with atomic_write(target.parent) as handle:  # doctest: +ELLIPSIS
    ...     pass
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: ...: is a folder, not a file (give the path of a file ...
    """
    target = Path(path)
    refuse_unexpanded(target)
    if target.is_dir():
        # Renaming onto it failed with an IsADirectoryError naming the temporary file
        # (write_json_report(result, "out/") in a notebook). The command line refuses it
        # sooner (check_outputs).
        raise InputError(
            "is a folder, not a file",
            file=target,
            hint="give the path of a file (inside this folder, for example)",
        )
    if is_stream(target):
        # /dev/null, /dev/stdout, a named pipe: written in place (renaming a temporary
        # file over a device would replace the device).
        with open(target, mode, **kwargs) as handle:
            yield handle
        return
    tmp = reserve_temp(target)
    try:
        with _open_reserved(tmp, mode, **kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if sync_dir:
        _fsync_dir(target.parent)


def start_writeback(fd: int, offset: int, length: int) -> None:
    """Ask the kernel to start writing bytes ``offset:offset+length`` of file ``fd`` to
    disk now, without waiting (Linux ``sync_file_range(SYNC_FILE_RANGE_WRITE)``; nothing
    happens elsewhere or when it fails).

    A large file written in one go leaves all of its pages for the final ``fsync`` to
    write, after the last byte; started as the file grows, that writing overlaps the rest
    of the work, and the ``fsync`` (which still guarantees the data is on disk) has
    little left to wait for.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryFile() as handle:
    ...     _ = handle.write(b"x" * 10)
    ...     handle.flush()
    ...     start_writeback(handle.fileno(), 0, 10)
    """
    global _SYNC_FILE_RANGE
    if _SYNC_FILE_RANGE is None:
        _SYNC_FILE_RANGE = False
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError, AttributeError):
                import ctypes

                function = ctypes.CDLL(None).sync_file_range  # glibc and musl have it
                function.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
                _SYNC_FILE_RANGE = function
    if _SYNC_FILE_RANGE:
        _SYNC_FILE_RANGE(fd, offset, length, 2)  # SYNC_FILE_RANGE_WRITE; errors ignored


_SYNC_FILE_RANGE: Any = None


def is_stream(path: Path) -> bool:
    """Whether ``path`` is an existing character device, named pipe or socket."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def write_atomic(path: str | Path, data: bytes | str) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` atomically; see :func:`atomic_write`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> write_atomic(pathlib.Path(tempfile.mkdtemp()) / "a.json", "{}").read_text()
    '{}'
    """
    # A lone surrogate has no UTF-8 form: written as "?" rather than failing the output
    # (the readers turn them into U+FFFD before they get this far).
    payload = data.encode("utf-8", "replace") if isinstance(data, str) else data
    with atomic_write(path, "wb") as handle:
        handle.write(payload)
    return Path(path)


class StagedOutputs:
    """Temporary files for a command's outputs, published together when all succeeded.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> with StagedOutputs({"a": folder / "a.txt", "b": None}) as staged:
    ...     _ = staged["a"].write_text("new")
    >>> (folder / "a.txt").read_text(), staged["b"]
    ('new', None)
    """

    def __init__(self, outputs: Mapping[str, str | Path | None]) -> None:
        targets = {k: Path(v) for k, v in outputs.items() if v is not None}
        # A device or pipe (``--save /dev/null``) is written in place, never replaced.
        self.streams = {k: v for k, v in targets.items() if is_stream(v)}
        self.targets = {k: v for k, v in targets.items() if k not in self.streams}
        self.temps: dict[str, Path] = {}

    def __getitem__(self, key: str) -> Path | None:
        return self.streams.get(key) or self.temps.get(key)

    def __enter__(self) -> StagedOutputs:
        try:
            for key, target in self.targets.items():
                self.temps[key] = reserve_temp(target)
        except BaseException:
            self.discard()
            raise
        return self

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        if kind is not None:
            self.discard()
            return
        try:
            for key, tmp in self.temps.items():
                try:
                    os.replace(tmp, self.targets[key])
                except OSError as exc:
                    # Named by the output the user asked for, not our temporary file.
                    exc.filename, exc.filename2 = str(self.targets[key]), None
                    raise
        except BaseException:
            self.discard()
            raise
        for folder in {t.parent for t in self.targets.values()}:
            _fsync_dir(folder)

    def discard(self) -> None:
        """Remove every temporary file still there (the targets are untouched)."""
        for tmp in self.temps.values():
            with contextlib.suppress(OSError):
                tmp.unlink()


def _identity(path: Path) -> tuple[str, tuple[int, int] | None]:
    resolved = os.path.realpath(path)
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return resolved, None
    return resolved, (info.st_dev, info.st_ino)


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether ``a`` and ``b`` name one file: same resolved path, or same inode.

    Examples
    --------
    >>> import tempfile, pathlib, os
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "x").write_text("x")
    >>> os.symlink(folder / "x", folder / "link")
    >>> same_file(folder / "x", folder / "link"), same_file(folder / "x", folder / "y")
    (True, False)
    """
    path_a, inode_a = _identity(Path(a))
    path_b, inode_b = _identity(Path(b))
    return path_a == path_b or (inode_a is not None and inode_a == inode_b)


def is_inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (links resolved).

    Examples
    --------
    >>> is_inside(Path("/a/b/../c"), Path("/a")), is_inside(Path("/ab"), Path("/a"))
    (True, False)
    """
    resolved, base = os.path.realpath(path), os.path.realpath(folder)
    return resolved == base or resolved.startswith(base.rstrip(os.sep) + os.sep)


#: What ``stat`` of an output's path can say that no write there could overcome.
_NEVER_WRITABLE = (errno.ENAMETOOLONG, errno.ENOTDIR)


def check_outputs(
    outputs: Mapping[str, str | Path | None],
    inputs: Iterable[str | Path],
    *,
    folders: Iterable[str] = (),
    input_folders: Mapping[str | Path, str] | None = None,
) -> None:
    """Refuse, before any work, outputs that would destroy an input or each other.

    Parameters
    ----------
    outputs
        Option name (as the user typed it, e.g. ``"--save"``) → path, or None if not asked.
    inputs
        Files the command reads.
    folders
        The options in ``outputs`` that name a folder (``--parquet``); the others are files.
    input_folders
        Folders the command keeps state in → what they are, as the message names them
        (``"the run folder"`` of ``--run-dir``, ``"the archive"``): no output may be
        inside one, nor a folder output hold one.

    Raises
    ------
    InputError
        Two outputs name one file; an output names an input, or is inside an input folder;
        a file output is an existing directory, or a folder output an existing file.

    Examples
    --------
    >>> check_outputs({"--save": "r.json", "--csv": "r.json"}, [])
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: r.json: --save and --csv name the same file \
(give each output its own path)
    """
    folder_options = set(folders)
    given = [(option, Path(path)) for option, path in outputs.items() if path is not None]
    inputs = [Path(p) for p in inputs]
    for index, (option, path) in enumerate(given):
        is_folder = option in folder_options
        try:
            mode = os.stat(path).st_mode
        except (OSError, ValueError) as exc:
            mode = None
            if isinstance(exc, OSError) and exc.errno in _NEVER_WRITABLE:
                # Found now, not after the run: no file can be made at such a path.
                raise os_refusal(
                    exc, f"{option} cannot be written there ({exc.strerror})"
                ) from None
        if mode is not None and not is_folder and stat.S_ISDIR(mode):
            if path == Path():
                # The command line reads an empty value as ".": `--summary
                # "$GITHUB_STEP_SUMMARY"` outside GitHub Actions is refused as a folder.
                raise InputError(
                    f"{option} is empty or '.', the current directory, not a file",
                    hint="give a file name; an unset variable, such as $GITHUB_STEP_SUMMARY "
                    "outside GitHub Actions, gives an empty value",
                )
            raise InputError(
                f"{option} names a directory, not a file", file=path, hint="give a file name"
            )
        if mode is not None and is_folder and not stat.S_ISDIR(mode):
            raise InputError(
                f"{option} names an existing file, not a folder",
                file=path,
                hint="give a folder (it is created if missing)",
            )
        for other, other_path in given[:index]:
            if is_stream(path):
                break  # /dev/null may take several outputs
            if same_file(path, other_path) or (
                other in folder_options and is_inside(path, other_path)
            ):
                raise InputError(
                    f"{other} and {option} name the same file",
                    file=path,
                    hint="give each output its own path",
                )
            if is_folder and is_inside(other_path, path):
                raise InputError(
                    f"{other} is inside the {option} folder",
                    file=other_path,
                    hint="give each output its own path",
                )
        for source in inputs:
            if same_file(path, source) or (is_folder and is_inside(source, path)):
                raise InputError(
                    f"{option} would overwrite an input of this command",
                    file=path,
                    hint="write the output somewhere else",
                )
        for folder, what in (input_folders or {}).items():
            if is_inside(path, Path(folder)) or (is_folder and is_inside(Path(folder), path)):
                raise InputError(
                    f"{option} is inside {what} {folder}",
                    file=path,
                    hint=f"write the output outside {what}",
                )


#: A file whose status changed less than this long before it was read is compared by
#: content as well (:func:`file_key`).
RECENT_CHANGE_NS = 2_000_000_000


def file_key(path: str | Path, *, content: bool | None = None) -> tuple[Any, ...] | None:
    """What says a file is the one read earlier (a trial file replayed ahead, an input
    hashed ahead): device, inode, size, modification and status-change times, and, for a
    file changed recently, its content digest.

    A file rewritten in place changes its size or times; one replaced by a rename has
    another inode. Times have a granularity (a clock tick, more on some file systems), so
    a file written again within the tick of its previous change could keep them: a file
    whose status changed less than :data:`RECENT_CHANGE_NS` before it is read is
    therefore compared by content too (``content``: None decides so from its
    status-change time). The status-change time cannot be set back by ``touch`` or
    ``os.utime``.
    """
    try:
        status = os.stat(path)
        if content is None:
            content = time.time_ns() - status.st_ctime_ns < RECENT_CHANGE_NS
        digest = b""
        if content:
            with open(path, "rb") as handle:
                digest = hashlib.file_digest(handle, "blake2b").digest()
    except OSError:
        return None
    return (
        status.st_dev,
        status.st_ino,
        status.st_size,
        status.st_mtime_ns,
        status.st_ctime_ns,
        digest,
    )
