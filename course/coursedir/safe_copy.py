"""Read a folder that a student can write without following a link: only what the student made.

A student who can write a folder the instructor later reads (a submission in the exchange, an
unpacked LMS export) can put there a symbolic link to the instructor's source notebook or
gradebook, a hard link, a FIFO that blocks whoever opens it, a socket or a device. A copy made
with the instructor's rights would follow them. Here every folder and file is opened relative to
its folder's descriptor with O_NOFOLLOW, and checked on the open descriptor (fstat), so nothing
can be swapped between the check and the copy. Only folders and regular files are taken, each
owned by the expected user, each file with exactly one link; the rest is refused by name, and
the files and bytes taken are bounded.
"""

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

MAX_FILES = 1000
MAX_BYTES = 100 * 2**20  # nbgrader's CourseDirectory.max_dir_size, 100 MB
MAX_DEPTH = 32
MAX_ENTRIES = 10 * MAX_FILES  # files, folders and whatever is refused, looked at in all
CHUNK = 2**20
FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


@dataclass(frozen=True)
class Limits:
    """How much one copy may take: files, bytes in all, bytes per file, depth, entries seen."""

    files: int = MAX_FILES
    total_bytes: int = MAX_BYTES
    file_bytes: int = MAX_BYTES
    depth: int = MAX_DEPTH
    entries: int = MAX_ENTRIES


@dataclass(frozen=True)
class Refusal:
    """An entry that was not copied, by its path inside the folder, and why."""

    path: str
    reason: str

    def __str__(self):
        return f"{self.path}: {self.reason}"


@dataclass
class Copied:
    """What a copy took (paths inside the folder, bytes in all) and what it refused."""

    files: list = field(default_factory=list)
    refused: list = field(default_factory=list)
    total_bytes: int = 0
    folders: int = 0
    entries: int = 0


@dataclass
class Walk:
    """The rules of one walk, and what it has taken so far."""

    owner: int
    limits: Limits
    ignore: object
    copied: Copied

    def refuse(self, path, reason):
        """Record that `path` was not copied."""
        self.copied.refused.append(Refusal(path, reason))

    def take(self, path, size):
        """Count a file of `size` bytes in, and True, unless it would break the limits."""
        reason = over_limit(self, size)
        if reason:
            self.refuse(path, reason)
            return False
        self.copied.files.append(path)
        self.copied.total_bytes += size
        return True

    def drop(self, path, size, reason):
        """Take back a file that turned out not to be what it was when opened."""
        self.copied.files.remove(path)
        self.copied.total_bytes -= size
        self.refuse(path, reason)


def kind_of(mode):
    """Why an entry of `mode` (a link, a FIFO, a socket, a device) is refused, else None."""
    return next((reason for test, reason in KINDS if test(mode)), None)


def unsafe(status, owner):
    """Why a folder or file (its fstat or lstat) may not be copied, or None."""
    if kind_of(status.st_mode):
        return kind_of(status.st_mode)
    if not (stat.S_ISDIR(status.st_mode) or stat.S_ISREG(status.st_mode)):
        return "neither a file nor a folder"
    if stat.S_ISREG(status.st_mode) and status.st_nlink != 1:
        return f"a hard link ({status.st_nlink} links)"
    if status.st_uid != owner:
        return f"owned by another user (uid {status.st_uid})"
    return None


def same_entry(before, after):
    """True when two stats are of the same file, of the same kind."""
    same_file = (before.st_dev, before.st_ino) == (after.st_dev, after.st_ino)
    return same_file and stat.S_IFMT(before.st_mode) == stat.S_IFMT(after.st_mode)


def open_entry(name, folder_fd, flags):
    """Open `name` in the open folder without following a link; (descriptor, or why not)."""
    try:
        return os.open(name, flags, dir_fd=folder_fd), None
    except OSError as error:
        return None, why_not_opened(name, folder_fd, error)


def why_not_opened(name, folder_fd, error):
    """What `name` is, when it could not be opened as a file or folder (a link, say)."""
    try:
        found = kind_of(os.lstat(name, dir_fd=folder_fd).st_mode)
    except OSError:
        found = None
    return found or (error.strerror or "could not be opened").lower()


def open_folder(source, owner):
    """An open descriptor of the folder `source`, which `owner` must own; ValueError if not."""
    try:
        fd = os.open(source, FOLDER_FLAGS)
    except OSError as error:
        reason = why_not_opened(source, None, error)
        raise ValueError(f"{source}: expected a folder, found {reason}") from None
    status = os.fstat(fd)
    if status.st_uid != owner:
        os.close(fd)
        raise ValueError(f"{source}: expected a folder owned by uid {owner}, not {status.st_uid}")
    return fd


def walk_files(source, walk):
    """An iterator of (path inside `source`, open descriptor, size) of each file `walk` takes.

    Each descriptor is closed when the next one is asked for; `walk.copied` lists what was
    taken and what was refused. ValueError, at once, if `source` is not a folder of the owner.
    """
    return files_of_open_folder(walk, open_folder(source, walk.owner))


def files_of_open_folder(walk, fd):
    """Yield the files of the open folder `fd` as walk_files does, then close it."""
    try:
        yield from walk_folder(walk, fd, "", 0)
    finally:
        os.close(fd)


def walk_folder(walk, folder_fd, prefix, depth):
    """Yield the files of one open folder, and of its folders, as walk_files does."""
    for name in names_in(walk, folder_fd, prefix):
        path = prefix + name
        try:
            status = os.lstat(name, dir_fd=folder_fd)
        except FileNotFoundError:
            continue
        if walk.ignore(name, stat.S_ISDIR(status.st_mode)):
            continue
        reason = unsafe(status, walk.owner)
        if reason:
            walk.refuse(path, reason)
        elif stat.S_ISDIR(status.st_mode):
            yield from walk_subfolder(walk, folder_fd, name, status, path, depth)
        else:
            yield from take_file(walk, folder_fd, name, status, path)


def names_in(walk, folder_fd, prefix):
    """The names in an open folder, sorted, as many as the limit of entries leaves."""
    names = []
    with os.scandir(folder_fd) as entries:
        for entry in entries:
            if walk.copied.entries >= walk.limits.entries:
                walk.refuse(
                    prefix.rstrip("/") or ".", f"over the limit of {walk.limits.entries} entries"
                )
                break
            walk.copied.entries += 1
            names.append(entry.name)
    return sorted(names)


def walk_subfolder(walk, folder_fd, name, status, path, depth):
    """Yield the files of the folder `name` (`path` inside the source), checked once open."""
    if depth + 1 >= walk.limits.depth:
        walk.refuse(path, f"more than {walk.limits.depth} folders deep")
        return
    if walk.copied.folders >= walk.limits.files:
        walk.refuse(path, f"over the limit of {walk.limits.files} folders")
        return
    walk.copied.folders += 1
    fd, _ = open_checked(walk, folder_fd, name, status, path, FOLDER_FLAGS)
    if fd is None:
        return
    try:
        yield from walk_folder(walk, fd, f"{path}/", depth + 1)
    finally:
        os.close(fd)


def open_checked(walk, folder_fd, name, status, path, flags):
    """(descriptor, fstat) of entry `name` opened without following a link, if it is still what
    lstat saw (`status`) and safe to take; else (None, None), the entry refused with its reason."""
    fd, reason = open_entry(name, folder_fd, flags)
    if fd is None:
        walk.refuse(path, reason)
        return None, None
    try:
        opened = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    reason = unsafe(opened, walk.owner) or (
        None if same_entry(status, opened) else "changed while it was copied"
    )
    if reason:
        os.close(fd)
        walk.refuse(path, reason)
        return None, None
    return fd, opened


def over_limit(walk, size):
    """Why one more file of `size` bytes would break the limits, or None."""
    limits, copied = walk.limits, walk.copied
    if len(copied.files) >= limits.files:
        return f"over the limit of {limits.files} files"
    if size > limits.file_bytes:
        return f"{size} bytes, over the limit of {limits.file_bytes} per file"
    if copied.total_bytes + size > limits.total_bytes:
        return f"over the limit of {limits.total_bytes} bytes in all"
    return None


def take_file(walk, folder_fd, name, status, path):
    """Yield the file `name` open, if it is still what lstat saw and within the limits."""
    fd, opened = open_checked(walk, folder_fd, name, status, path, FILE_FLAGS)
    if fd is None:
        return
    try:
        if walk.take(path, opened.st_size):
            yield path, fd, opened.st_size
    finally:
        os.close(fd)


def chunks_of(fd, size):
    """Yield the `size` bytes of an open file; ValueError if it holds more or fewer by now."""
    done = 0
    while done <= size:
        chunk = os.read(fd, min(CHUNK, size + 1 - done))
        if not chunk:
            break
        done += len(chunk)
        if done > size:
            raise ValueError(f"expected {size} bytes, found more")
        yield chunk
    if done < size:
        raise ValueError(f"expected {size} bytes, found {done}")


def new_walk(owner, limits=None, ignore=None):
    """A walk that takes what `owner` made, within `limits`, skipping what `ignore` names."""
    skip = ignore or (lambda name, is_folder: False)
    return Walk(owner, limits or Limits(), skip, Copied())


def read_files(source, owner, limits=None, ignore=None):
    """(path inside `source` -> (bytes, modification time), Copied) for each file it may take.

    `owner` is the user id that must own every folder and file; `ignore(name, is_folder)` skips
    an entry silently.
    """
    walk = new_walk(owner, limits, ignore)
    return read_walk(source, walk), walk.copied


def read_walk(source, walk):
    """Path inside `source` -> (bytes, modification time) of each file that `walk` takes."""
    found = {}
    for path, fd, size in walk_files(source, walk):
        try:
            found[path] = (b"".join(chunks_of(fd, size)), os.fstat(fd).st_mtime)
        except ValueError as error:
            walk.drop(path, size, f"changed while it was copied ({error})")
    return found


def copy_tree(source, target, owner, limits=None, ignore=None):
    """Copy into the new folder `target` what `owner` made in `source`, as read_files takes it.

    Files are written 0600 and folders 0700 (less the umask); a file's time is kept. Returns the
    Copied.
    """
    walk = new_walk(owner, limits, ignore)
    files = walk_files(source, walk)
    target = Path(target)
    target.mkdir(mode=0o700, parents=True)
    for path, fd, size in files:
        destination = target / path
        destination.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            write_copy(fd, size, destination)
        except ValueError as error:
            destination.unlink(missing_ok=True)
            walk.drop(path, size, f"changed while it was copied ({error})")
    return walk.copied


def write_copy(fd, size, destination):
    """Write the `size` bytes of the open file to the new file `destination`, with its time."""
    status = os.fstat(fd)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(destination, flags, 0o600), "wb") as out:
        for chunk in chunks_of(fd, size):
            out.write(chunk)
        out.flush()
        os.utime(out.fileno(), ns=(status.st_atime_ns, status.st_mtime_ns))
