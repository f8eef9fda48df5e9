"""A folder a student can write is copied without following a link: only what the student made."""

import os
import signal
import socket
import stat

import pytest

from course.coursedir import safe_copy
from course.coursedir.safe_copy import Limits, copy_tree, read_files

SOLUTION = b"### BEGIN SOLUTION\nsecret\n### END SOLUTION\n"
NOTEBOOK = "01_softmax_lab.ipynb"
STRANGER = 4242  # a user id that owns nothing of the student's
ME = os.getuid()
as_root = pytest.mark.skipif(ME != 0, reason="only root gives a file to another user")


@pytest.fixture(autouse=True)
def no_hang():
    """Fail, rather than hang, when a copy blocks (on a FIFO, say)."""

    def interrupt(signum, frame):
        raise TimeoutError("the copy blocked")

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def secret(tmp_path):
    """The instructor's source notebook, which the student must not get."""
    folder = tmp_path / "instructor"
    folder.mkdir()
    path = folder / NOTEBOOK
    path.write_bytes(SOLUTION)
    return path


@pytest.fixture
def submission(tmp_path):
    """A student's submission: a notebook, and a nested folder with a data file."""
    folder = tmp_path / "inbound" / "ada+01_softmax+2026-01-01 00:00:00 UTC+x"
    (folder / "data" / "deeper").mkdir(parents=True)
    (folder / "timestamp.txt").write_text("2026-01-01 00:00:00 UTC")
    (folder / "data" / "deeper" / "values.csv").write_text("1,2\n")
    return folder


def copied_files(target):
    """Path inside `target` -> bytes, for every file in it."""
    return {p.relative_to(target).as_posix(): p.read_bytes() for p in target.rglob("*")
            if p.is_file()}  # fmt: skip


def refusals(copied):
    """Path -> reason, for what a copy refused."""
    return {refusal.path: refusal.reason for refusal in copied.refused}


def test_the_students_own_files_are_copied_with_their_times(submission, tmp_path):
    (submission / NOTEBOOK).write_bytes(b"{}")
    os.utime(submission / NOTEBOOK, (1_000_000_000, 1_000_000_000))
    target = tmp_path / "submitted"
    copied = copy_tree(submission, target, ME)
    assert copied.refused == []
    assert copied.files == [NOTEBOOK, "data/deeper/values.csv", "timestamp.txt"]
    assert copied_files(target) == {
        NOTEBOOK: b"{}",
        "data/deeper/values.csv": b"1,2\n",
        "timestamp.txt": b"2026-01-01 00:00:00 UTC",
    }
    assert (target / NOTEBOOK).stat().st_mtime == 1_000_000_000
    assert copied.total_bytes == 2 + 4 + 23


@pytest.mark.parametrize(
    "place",
    [NOTEBOOK, "gradebook.db", "data/deeper/" + NOTEBOOK],
    ids=["notebook", "gradebook", "nested"],
)
def test_a_link_to_a_file_is_refused(submission, secret, tmp_path, place):
    (submission / place).symlink_to(secret)
    target = tmp_path / "submitted"
    copied = copy_tree(submission, target, ME)
    assert refusals(copied) == {place: "a symbolic link"}
    assert SOLUTION not in b"".join(copied_files(target).values())
    assert not (target / place).exists()


def test_a_link_to_a_folder_is_refused(submission, secret, tmp_path):
    (submission / "source").symlink_to(secret.parent, target_is_directory=True)
    copied = copy_tree(submission, tmp_path / "submitted", ME)
    assert refusals(copied) == {"source": "a symbolic link"}
    assert not (tmp_path / "submitted" / "source").exists()


def test_a_hard_link_is_refused(submission, tmp_path):
    own = tmp_path / "elsewhere.ipynb"
    own.write_bytes(SOLUTION)
    os.link(own, submission / NOTEBOOK)
    copied = copy_tree(submission, tmp_path / "submitted", ME)
    assert refusals(copied) == {NOTEBOOK: "a hard link (2 links)"}


@as_root
def test_a_hard_link_to_a_file_the_student_does_not_own_is_refused(submission, secret, tmp_path):
    os.chown(secret, STRANGER, -1)
    os.link(secret, submission / NOTEBOOK)
    copied = copy_tree(submission, tmp_path / "submitted", ME)
    assert refusals(copied) == {NOTEBOOK: "a hard link (2 links)"}
    assert not (tmp_path / "submitted" / NOTEBOOK).exists()


def test_a_fifo_is_refused_without_blocking(submission, tmp_path):
    os.mkfifo(submission / NOTEBOOK)
    copied = copy_tree(submission, tmp_path / "submitted", ME)
    assert refusals(copied) == {NOTEBOOK: "a FIFO"}
    assert len(copied.files) == 2


def test_a_socket_is_refused(submission, tmp_path, monkeypatch):
    monkeypatch.chdir(submission)
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind("kernel.sock")
        copied = copy_tree(submission, tmp_path / "submitted", ME)
    assert refusals(copied) == {"kernel.sock": "a socket"}


@as_root
def test_a_device_is_refused(submission, tmp_path):
    try:
        os.mknod(submission / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("this Linux lets no one make a device node here")
    copied = copy_tree(submission, tmp_path / "submitted", ME)
    assert refusals(copied) == {"null": "a device"}


@as_root
def test_a_file_or_folder_owned_by_another_user_is_refused(submission, tmp_path):
    (submission / NOTEBOOK).write_bytes(SOLUTION)
    os.chown(submission / NOTEBOOK, STRANGER, -1)
    os.chown(submission / "data" / "deeper", STRANGER, -1)
    copied = copy_tree(submission, tmp_path / "submitted", ME)
    assert refusals(copied) == {
        NOTEBOOK: f"owned by another user (uid {STRANGER})",
        "data/deeper": f"owned by another user (uid {STRANGER})",
    }
    assert copied.files == ["timestamp.txt"]


def test_the_folder_itself_must_be_a_folder_the_student_owns(submission, tmp_path):
    link = tmp_path / "inbound" / "ada+01_softmax+2026-01-02 00:00:00 UTC+y"
    link.symlink_to(submission, target_is_directory=True)
    with pytest.raises(ValueError, match="expected a folder, found a symbolic link"):
        copy_tree(link, tmp_path / "submitted", ME)
    with pytest.raises(ValueError, match=f"expected a folder owned by uid {ME + 1}"):
        copy_tree(submission, tmp_path / "submitted", ME + 1)
    assert not (tmp_path / "submitted").exists()


def swap_before_opening(monkeypatch, name, swap):
    """Run `swap(folder_fd)` once, after the listing and just before `name` is opened."""
    real_open = safe_copy.open_entry

    def open_entry(entry, folder_fd, flags):
        if entry == name:
            swap(folder_fd)
        return real_open(entry, folder_fd, flags)

    monkeypatch.setattr(safe_copy, "open_entry", open_entry)


def test_a_file_swapped_for_a_link_after_the_listing_is_refused(
    submission, secret, tmp_path, monkeypatch
):
    (submission / NOTEBOOK).write_bytes(b"{}")

    def swap(folder_fd):
        os.unlink(NOTEBOOK, dir_fd=folder_fd)
        os.symlink(secret, NOTEBOOK, dir_fd=folder_fd)

    swap_before_opening(monkeypatch, NOTEBOOK, swap)
    target = tmp_path / "submitted"
    copied = copy_tree(submission, target, ME)
    assert refusals(copied) == {NOTEBOOK: "a symbolic link"}
    assert SOLUTION not in b"".join(copied_files(target).values())


def test_a_file_swapped_for_another_after_the_listing_is_refused(submission, tmp_path, monkeypatch):
    (submission / NOTEBOOK).write_bytes(b"{}")

    def swap(folder_fd):
        os.rename("timestamp.txt", NOTEBOOK, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)

    swap_before_opening(monkeypatch, NOTEBOOK, swap)
    copied = copy_tree(submission, tmp_path / "submitted", ME)
    assert refusals(copied) == {NOTEBOOK: "changed while it was copied"}


def test_a_folder_swapped_for_a_link_after_the_listing_is_refused(
    submission, secret, tmp_path, monkeypatch
):
    def swap(folder_fd):
        os.rename("data", "old", src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        os.symlink(secret.parent, "data", dir_fd=folder_fd)

    swap_before_opening(monkeypatch, "data", swap)
    target = tmp_path / "submitted"
    copied = copy_tree(submission, target, ME)
    assert refusals(copied)["data"] == "a symbolic link"
    assert SOLUTION not in b"".join(copied_files(target).values())


def test_a_file_that_grows_while_it_is_copied_is_refused(submission, tmp_path, monkeypatch):
    (submission / NOTEBOOK).write_bytes(b"{}")
    real_chunks = safe_copy.chunks_of

    def grown(fd, size):
        with open(submission / NOTEBOOK, "ab") as more:
            more.write(SOLUTION)
        return real_chunks(fd, size)

    monkeypatch.setattr(safe_copy, "chunks_of", grown)
    copied = copy_tree(submission, tmp_path / "submitted", ME)
    assert "changed while it was copied" in refusals(copied)[NOTEBOOK]
    assert not (tmp_path / "submitted" / NOTEBOOK).exists()


def test_the_files_bytes_and_depth_copied_are_bounded(submission, tmp_path):
    (submission / NOTEBOOK).write_bytes(b"x" * 100)
    copied = copy_tree(submission, tmp_path / "a", ME, Limits(files=2))
    assert copied.files == [NOTEBOOK, "data/deeper/values.csv"]
    assert refusals(copied) == {"timestamp.txt": "over the limit of 2 files"}
    copied = copy_tree(submission, tmp_path / "b", ME, Limits(file_bytes=50))
    assert refusals(copied) == {NOTEBOOK: "100 bytes, over the limit of 50 per file"}
    copied = copy_tree(submission, tmp_path / "c", ME, Limits(total_bytes=110))
    assert refusals(copied) == {"timestamp.txt": "over the limit of 110 bytes in all"}
    copied = copy_tree(submission, tmp_path / "d", ME, Limits(depth=2))
    assert refusals(copied) == {"data/deeper": "more than 2 folders deep"}
    copied = copy_tree(submission, tmp_path / "e", ME, Limits(entries=4))
    assert refusals(copied) == {"data/deeper": "over the limit of 4 entries"}


def test_ignored_names_are_skipped_and_files_can_be_read_into_memory(submission):
    (submission / ".ipynb_checkpoints").mkdir()
    (submission / NOTEBOOK).write_bytes(b"{}")
    found, copied = read_files(submission, ME, ignore=lambda name, is_folder: name[0] == ".")
    assert {path: data for path, (data, _) in found.items()} == {
        NOTEBOOK: b"{}",
        "data/deeper/values.csv": b"1,2\n",
        "timestamp.txt": b"2026-01-01 00:00:00 UTC",
    }
    assert copied.refused == []
