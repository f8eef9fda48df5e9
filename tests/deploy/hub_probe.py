"""What a user of the class can do to given paths: run as that user by tests/deploy/test_hub.py.

    python hub_probe.py '[["read", "/path"], ["list", "/folder"], ...]'

prints, as JSON, one result per operation: "ok" or the name of the error (EACCES, EPERM, ...).
"""

import errno
import json
import os
import sys

OPERATIONS = {
    "list": os.listdir,
    "read": lambda path: open(path, "rb").read(1),
    "write": lambda path: open(path, "r+b").write(b"x"),
    "create": lambda path: open(path, "xb").close(),
    "remove": os.remove,
    "rename": lambda path, target: os.rename(path, target),
    "forge": lambda path, content: forge(path, content),
    "link": lambda path, target: os.symlink(target, path),
    "fifo": os.mkfifo,
}


def forge(path, content):
    """Write `content` to a new file `path`, creating its folder."""
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as file:
        file.write(content)


def attempt(operation, *arguments):
    """Run one operation; "ok" or the error's name."""
    try:
        OPERATIONS[operation](*arguments)
        return "ok"
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error))


if __name__ == "__main__":
    print(json.dumps([attempt(*operation) for operation in json.loads(sys.argv[1])]))
