"""The grader's side of a sandboxed kernel's folder: made before it starts, removed after.

Each start of a sandboxed kernel gets a private folder of the grader's (`new_kernel_folder`)
holding its socket folder, a fresh size-capped tmpfs when the grader is root
(`make_socket_folder`), and the root that `sandbox.enter` builds. Once the kernel has made its
sockets, `pin_sockets` holds them open and links to them, so the grader reaches what the kernel
made as it started, whatever the kernel puts in its folder later. `remove_socket_folder` and
`remove_tree` remove what a kernel left, following no link; `sweep_kernel_folders` what the
kernels of a killed grader left. All of it runs in the grader, none in the kernel.
"""

import os
import stat
import tempfile
from pathlib import Path

from course.grading.kernels import cgroups
from course.grading.kernels.linux import (
    FOLDER_FLAGS,
    MNT_DETACH,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    UMOUNT_NOFOLLOW,
    SandboxError,
    libc,
    mount,
)
from course.grading.kernels.policy import Limits

KERNEL_FOLDER_PREFIX = "course-sandbox-"  # then the id of the grader process that made it


def new_kernel_folder():
    """A new private folder (mode 0700) for one kernel's socket folder and root."""
    return Path(tempfile.mkdtemp(prefix=f"{KERNEL_FOLDER_PREFIX}{os.getpid()}-"))


def sweep_kernel_folders():
    """Remove the kernel folders that this user's ended grader processes left (e.g. killed)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{KERNEL_FOLDER_PREFIX}*-*"):
        maker = folder.name.removeprefix(KERNEL_FOLDER_PREFIX).split("-")[0]
        status = folder.lstat()
        ours = stat.S_ISDIR(status.st_mode) and status.st_uid == os.geteuid()
        if ours and maker.isdigit() and not cgroups.running(int(maker)):
            remove_socket_folder(folder / "ipc")
            remove_tree(folder)


def make_socket_folder(ipc_dir, limits=None):
    """Make `ipc_dir`, empty, for one kernel start: a tmpfs with a size and a number of files.

    Only root can mount it; otherwise the folder is a plain one, as large as its file system.
    """
    os.mkdir(ipc_dir, 0o700)
    if os.geteuid() == 0:
        limits = limits or Limits()
        size, files = limits.socket_folder_bytes, limits.socket_folder_files
        options = f"size={size},nr_inodes={files},mode=700"
        mount("tmpfs", ipc_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options)


def pin_sockets(ipc_dir, sockets, links_dir):
    """Hold the kernel's `sockets` (names in `ipc_dir`) open, and link to them from `links_dir`.

    Called once the kernel has made its sockets, before any student code ran. Each socket is
    opened without following links and checked to be one; `links_dir/<name>` then leads to that
    open file through /proc, so the grader connects to what the kernel made as it started
    whatever the kernel later puts in its folder. As root, the folder is also taken back from
    the kernel. Returns the open descriptors (close them when the kernel is gone); SandboxError
    if one of them is not a socket.
    """
    folder = os.open(ipc_dir, FOLDER_FLAGS)
    pinned = []
    try:
        if os.geteuid() == 0:
            os.fchown(folder, os.geteuid(), os.getegid())
            os.fchmod(folder, 0o700)
        for name in sockets:
            pinned.append(os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder))
            if not stat.S_ISSOCK(os.fstat(pinned[-1]).st_mode):
                raise SandboxError(f"the kernel's {name} in {ipc_dir} is not a socket")
    except BaseException:
        unpin_sockets(pinned)
        raise
    finally:
        os.close(folder)
    remove_tree(links_dir)
    os.mkdir(links_dir, 0o700)
    for name, descriptor in zip(sockets, pinned, strict=True):
        os.symlink(f"/proc/{os.getpid()}/fd/{descriptor}", os.path.join(links_dir, name))
    return pinned


def unpin_sockets(pinned):
    """Close the descriptors that `pin_sockets` returned."""
    for descriptor in pinned:
        os.close(descriptor)


def remove_socket_folder(ipc_dir):
    """Remove `ipc_dir` and whatever a kernel left in it: unmount its tmpfs, remove the rest."""
    if os.geteuid() == 0:
        libc.umount2(str(ipc_dir).encode(), MNT_DETACH | UMOUNT_NOFOLLOW)  # fails if not mounted
    remove_tree(ipc_dir)


def remove_tree(path):
    """Remove the folder `path` and all in it: no link followed, no recursion, at any depth.

    One folder is open at a time: the walk goes down by name and back up by "..", checking that
    each folder it comes back to is the one it left.
    """
    try:
        current = os.open(path, FOLDER_FLAGS)
    except FileNotFoundError:
        return
    names, identities = [], [_identity(current)]
    try:
        while True:
            child = _empty_but_one_folder(current)
            if child is not None:
                below = os.open(child, FOLDER_FLAGS, dir_fd=current)
                os.close(current)
                current = below
                names.append(child)
                identities.append(_identity(current))
            elif names:
                above = os.open("..", FOLDER_FLAGS, dir_fd=current)
                os.close(current)
                current = above
                identities.pop()
                if _identity(current) != identities[-1]:
                    raise OSError(f"{path} was moved while it was being removed")
                os.rmdir(names.pop(), dir_fd=current)
            else:
                break
    finally:
        os.close(current)
    os.rmdir(path)


def _identity(descriptor):
    """(device, inode) of an open file."""
    status = os.fstat(descriptor)
    return status.st_dev, status.st_ino


def _empty_but_one_folder(folder):
    """Unlink every entry of the open `folder` but its folders; the name of one of them, or None."""
    removed = True
    while removed:  # a scan that removes entries may miss others: scan until one removes none
        removed = False
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    return entry.name
                os.unlink(entry.name, dir_fd=folder)
                removed = True
    return None
