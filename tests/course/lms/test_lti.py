"""course/lms/lti.py: the course's LTI key, made once however many processes ask for it first."""

import os
import stat
from concurrent.futures import ProcessPoolExecutor

from cryptography.hazmat.primitives import serialization

from course.lms import lti


def public_pem(key):
    """The public half of `key` as PEM bytes, to compare keys by."""
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def test_the_key_is_made_once_private_and_then_read(tmp_path):
    key = lti.tool_key(tmp_path)
    path = lti.lti_folder(tmp_path) / lti.KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert public_pem(lti.tool_key(tmp_path)) == public_pem(key)


def test_a_process_that_loses_the_race_reads_the_winners_key(tmp_path, monkeypatch):
    made = lti.publish_new_key

    def another_process_first(path, owner=None):
        made(path, owner)  # the other process links its key between our look and our link
        made(path, owner)

    monkeypatch.setattr(lti, "publish_new_key", another_process_first)
    key = lti.tool_key(tmp_path)
    monkeypatch.undo()
    assert public_pem(key) == public_pem(lti.tool_key(tmp_path))
    assert set(os.listdir(lti.lti_folder(tmp_path))) == {".gitignore", lti.KEY_FILE}


def test_processes_that_ask_at_once_all_get_the_same_key(tmp_path):
    with ProcessPoolExecutor(max_workers=4) as pool:
        keys = list(pool.map(public_pem_of_course, [tmp_path] * 4))
    assert len(set(keys)) == 1
    assert keys[0] == public_pem(lti.tool_key(tmp_path))


def public_pem_of_course(root):
    """The public half of the course's key at `root`, as a process of its own finds it."""
    return public_pem(lti.tool_key(root))
