"""Attacks on the machine from a kernel the student owns (every cell runs as written).

Each template is filled with the scratch course's `root`, the `mark` a successful attack would
leave, the `course_package` folder and the ports of listeners the test opens on loopback. The
sandbox must refuse each one, say so in the student's own output, and cost no other test.
"""

from attacks import NEED_SOFTMAX, WRONG_SOFTMAX, WRONG_SOFTMAX_FAILS, Attack

MARK = "PWNED-BY-A-SUBMISSION"
WRITES_COURSE = """
import numpy, torch
targets = ["{root}/gradebook.db", "{root}/nbgrader_config.py",
           "{root}/course/grading/preprocessors/feedback.py",
           "{root}/source/01_softmax/01_softmax_lab.ipynb", "../../../gradebook.db",
           "../../../nbgrader_config.py", "/tmp/{mark}"]
for target in targets:
    for write in (lambda: open(target, "a").write("{mark}"),
                  lambda: numpy.save(open(target, "ab"), numpy.frombuffer(b"{mark}", "uint8")),
                  lambda: torch.save("{mark}", target)):
        try:
            write()
            print("WROTE", target)
        except Exception as error:
            print("write refused:", target, type(error).__name__)
"""
READS_COURSE = """
import numpy
targets = ["{root}/source/01_softmax/01_softmax_lab.ipynb",
           "{root}/submitted/honest/01_softmax/01_softmax_lab.ipynb",
           "../../../source/01_softmax/01_softmax_lab.ipynb", "{course_package}/feedback.py"]
for target in targets:
    for read in (lambda: open(target).read(),
                 lambda: numpy.fromfile(target, dtype="uint8").tobytes().decode()):
        try:
            print(read())
        except Exception as error:
            print("read refused:", target, type(error).__name__)
"""
USES_NETWORK = """
import socket
for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
    port = {tcp_port} if kind == socket.SOCK_STREAM else {udp_port}
    try:
        with socket.socket(socket.AF_INET, kind) as sock:  # refused by the system call filter
            sock.settimeout(2)
            sock.connect(("127.0.0.1", port))
            sock.send(b"{mark}")
            print("SENT", kind)
    except OSError as error:
        print("network refused:", kind, type(error).__name__)
interfaces = [line.split(":")[0].strip() for line in open("/proc/net/dev").readlines()[2:]]
routes = open("/proc/net/route").readlines()[1:]
print("interfaces:", interfaces, "routes:", len(routes))
"""
OUTLIVES_GRADING = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
"""
HOOKS_LATER_KERNELS = """
import glob, os, time
if os.fork() == 0:
    os.setsid()
    deadline = time.time() + 120
    while time.time() < deadline:
        for path in glob.glob("/tmp/**/*.json", recursive=True):
            try:
                from jupyter_client import BlockingKernelClient
                client = BlockingKernelClient(connection_file=path)
                client.load_connection_info()
                client.start_channels()
                client.execute("def softmax(scores, dim=-1):\\n    return scores * 0\\n")
            except Exception:
                pass
        time.sleep(0.2)
    os._exit(0)
"""
# Address space, which the sandbox limits per process before its resident memory can reach the
# group's limit: untouched, it runs out at once, however busy the machine.
MEMORY_BOMB = """
import numpy
hoard = []
try:
    while True:
        hoard.append(numpy.empty(256 * 2**20, dtype=numpy.uint8))
except MemoryError:
    print("memory refused after", len(hoard) // 4, "GiB")
del hoard
"""
# System V shared memory: segments filled, detached and kept, which no per-process limit counts.
HOARDS_SHARED_MEMORY = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
kept = 0
while kept < 8 * 2**10:
    segment = libc.shmget(0, ctypes.c_size_t(4 * 2**20), 0o1600)
    if segment < 0:
        break
    address = libc.shmat(segment, None, 0)
    ctypes.memset(address, 1, 4 * 2**20)
    libc.shmdt(ctypes.c_void_p(address))
    kept += 4
print("shared memory refused after", kept, "MiB")
"""
FORK_BOMB = """
import os, time
children = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        children += 1
except OSError as error:
    print("fork refused after", children, "processes:", type(error).__name__)
"""
FILLS_DISK = """
import os
for folder in ("/tmp", os.path.expanduser("~"), "."):
    written = 0
    try:
        with open(os.path.join(folder, "{mark}"), "wb") as handle:
            while True:
                handle.write(b"x" * 2**20)
                handle.flush()
                written += 1
    except OSError as error:
        print("disk refused in", folder, "after", written, "MiB:", type(error).__name__)
"""
# Every binding form, over builtins and the names the test cells import from locked cells.
SHADOWS_BY_EVERY_BINDING = """
import utils.grading
import builtins as check_close
for check_shape in [lambda *args, **kwargs: None]:
    pass
with open("/dev/null") as check_finite:
    pass
if (check_sums_to_one := lambda *args, **kwargs: None) is not None:
    pass
try:
    raise ValueError("shadow")
except ValueError as getattr:
    pass
abs, len, all = (lambda *args: 0), (lambda *args: 0), (lambda *args: True)


def bool(*args):
    return True


class isinstance:
    pass


utils.grading.check_close = lambda *args, **kwargs: None
"""
ATTACKS = [
    Attack(
        name="writes_course",
        why="writes the gradebook, the configuration, the grader's code and the sources",
        code=WRITES_COURSE + WRONG_SOFTMAX,
        loses=NEED_SOFTMAX,
        # The course folder is not in the sandbox's file system at all.
        prints=("write refused: {root}/gradebook.db FileNotFoundError",),
        shows=(WRONG_SOFTMAX_FAILS,),
    ),
    Attack(
        name="reads_course",
        why="reads the hidden tests in the sources, another student's work and the grader's code",
        code=READS_COURSE + WRONG_SOFTMAX,
        loses=NEED_SOFTMAX,
        prints=(
            "read refused: {root}/source/01_softmax/01_softmax_lab.ipynb FileNotFoundError",
            "read refused: {root}/submitted/honest/01_softmax/01_softmax_lab.ipynb FileNotFound",
        ),
        shows=(WRONG_SOFTMAX_FAILS,),
    ),
    Attack(
        name="uses_network",
        why="sends the mark to listeners on loopback, over TCP (1) and UDP (2)",
        code=USES_NETWORK + WRONG_SOFTMAX,
        loses=NEED_SOFTMAX,
        prints=(
            "network refused: 1 OSError",
            "network refused: 2 OSError",
            "interfaces: ['lo'] routes: 0",
        ),
        shows=(WRONG_SOFTMAX_FAILS,),
    ),
    Attack(
        name="outlives_grading",
        why="leaves a daemon behind, detached from the kernel",
        code=OUTLIVES_GRADING + WRONG_SOFTMAX,
        loses=NEED_SOFTMAX,
        shows=(WRONG_SOFTMAX_FAILS,),
    ),
    Attack(
        name="a_hooks_later_kernels",
        why="a daemon that connects to every later kernel it finds and breaks its softmax",
        code=HOOKS_LATER_KERNELS + WRONG_SOFTMAX,
        loses=NEED_SOFTMAX,
        shows=(WRONG_SOFTMAX_FAILS,),
    ),
    Attack(
        name="memory_bomb",
        why="allocates memory until none is left",
        code=MEMORY_BOMB + WRONG_SOFTMAX,
        loses=NEED_SOFTMAX,
        prints=("memory refused after",),
        shows=(WRONG_SOFTMAX_FAILS,),
    ),
    Attack(
        name="hoards_shared_memory",
        why="keeps System V shared memory segments, detached, past any per-process limit",
        code=HOARDS_SHARED_MEMORY + WRONG_SOFTMAX,
        loses=NEED_SOFTMAX,
        prints=("shared memory refused after 16 MiB",),  # sandbox.Limits
        shows=(WRONG_SOFTMAX_FAILS,),
    ),
    Attack(
        name="fork_bomb",
        why="forks until no process is left",
        code=FORK_BOMB + WRONG_SOFTMAX,
        loses=NEED_SOFTMAX,
        prints=("fork refused after",),
        shows=(WRONG_SOFTMAX_FAILS,),
    ),
    Attack(
        name="fills_disk",
        why="fills /tmp, its home and its working folder",
        code=FILLS_DISK + WRONG_SOFTMAX,
        loses=NEED_SOFTMAX,
        prints=(
            "disk refused in /tmp after",
            "disk refused in /home/student after",
            "disk refused in . after",
        ),
        shows=(WRONG_SOFTMAX_FAILS,),
    ),
    Attack(
        name="shadows_by_every_binding",
        why="binds the checks' names and the builtins they use, in every binding form",
        code=SHADOWS_BY_EVERY_BINDING + WRONG_SOFTMAX,
        loses=NEED_SOFTMAX,
        # The cell stops at the module's attribute: softmax is never defined.
        shows=(
            "utils.grading is read-only: check_close cannot be replaced",
            "name 'softmax' is not defined",
        ),
    ),
]
# A module planted where another user can write (/tmp), named like one the grader imports.
PLANTED = "open({marker!r}, 'w').close()\nraise ImportError('planted')\n"
# A kernel that tries to leave links in its socket folder, and to swap a socket for one, then
# dies: the grader restarts it.
PLANTS_LINKS = """
import os
planted = []
for name in ("planted", "kernel.json.bak", "kernel-9"):
    try:
        os.symlink({target!r}, os.path.join({ipc_dir!r}, name))
        planted.append(name)
    except OSError:
        pass
try:
    os.rename(os.path.join({ipc_dir!r}, "kernel-1"), os.path.join({ipc_dir!r}, "moved"))
    planted.append("moved")
except OSError:
    pass
assert not planted, planted
"""
