"""The sandbox's whole policy: what a student's kernel may see, write, call and use.

Every limit, folder, device, variable and system call that the sandbox decides is here, each
with why; `sandbox`, `cgroups`, `syscall_filter` and `landlock` read it, and how they carry it
out is theirs. A reviewer who approves this file approves what a kernel may do (SECURITY.md: the
threat model). Imports nothing of `course`.
"""

from dataclasses import dataclass

KiB, MiB = 1 << 10, 1 << 20


@dataclass(frozen=True)
class Limits:
    """What one sandboxed kernel may use."""

    memory_bytes: int = 4096 * MiB  # address space of each process: torch and a lab fit
    sandbox_memory_bytes: int = 4096 * MiB  # resident memory of its control group, tmpfs included
    processes: int = 64  # processes and threads of its user and of its control group: no fork bomb
    cpu_seconds: int = 900  # CPU time of each process: a backstop far above a test's 30 s
    file_bytes: int = 32 * MiB  # largest file it may write: no lab writes one
    # of each process: a kernel that has trained a model and drawn a figure holds 62. Each may be
    # a socket, whose buffers no address-space limit counts (SOCKET_BUFFER_OPTIONS).
    open_files: int = 128
    tmp_bytes: int = 64 * MiB  # each of /tmp and the home folder: they are memory
    # files of each of /tmp and the home folder (a submission has at most 1000). tmpfs keeps
    # extended attributes in the space of its inodes, so this bounds them too (Linux >= 6.6).
    tmp_files: int = 4096
    shared_memory_bytes: int = 16 * MiB  # System V shared memory, sandbox whole: no lab uses it
    ipc_objects: int = 16  # System V segments, and likewise message queues and semaphore sets
    socket_folder_bytes: int = 1 * MiB  # the folder of its connection file and sockets
    socket_folder_files: int = 64  # a kernel makes five sockets and a connection file


# The largest file of a submission that collect takes: the grader reads a notebook whole (about
# three times its size at its peak), and no kernel may write a larger file (Limits.file_bytes).
SUBMITTED_FILE_BYTES = 32 * MiB
# The sandbox's root and /dev are tmpfs holding only mount points and links: a little each.
ROOT_BYTES = 1 * MiB
DEVICE_FOLDER_BYTES = 64 * KiB
ROOT_FILES = DEVICE_FOLDER_FILES = 256  # of each: no tmpfs of the sandbox has Linux's default
# What tmpfs counts against a file's inode besides its data (Linux's BOGO_INODE_SIZE): its
# extended attributes share nr_inodes x this.
TMPFS_INODE_BYTES = 1 * KiB
# System V IPC beyond the limits above: Linux's own defaults, which nothing needs raised.
MESSAGE_BYTES, MESSAGE_QUEUE_BYTES = 8192, 16384  # one message, one queue
SEMAPHORES_PER_SET = 32

# cgroups: the same CPU share for every sandbox (the default of any group), so that with N busy
# sandboxes each gets at least 1/N of the CPU, however many processes it runs.
CPU_SHARES = 1024  # cgroup v1
CPU_WEIGHT = 100  # cgroup v2

# Who the kernel is, as root: a user id no other sandbox has (UID_BASE + the pid that made it),
# so that no sandbox can signal or read another's processes.
UID_BASE = 2_000_000_000
# The kernel's home, a tmpfs holding a private copy of the student's folder.
HOME = "/home/student"

# Visible, read-only: the system a Python process needs, then Python, its installed packages
# and `utils` (found where they are installed). Nothing else of the machine or the course.
SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc"]
# Writable, besides its home and the folder of its sockets: /tmp, and /dev (its character
# devices and /dev/shm). Landlock, where Linux has it, lets it write nowhere else.
WRITABLE_PLACES = ("/tmp", "/dev")
# The devices of /dev: harmless character devices that Python and torch open.
DEVICES = ["null", "zero", "full", "random", "urandom"]

# The grader's variables that the kernel keeps: locale, paths and the settings of the libraries
# that make its results the same on every machine. No token, key or home of the instructor.
KEPT_ENVIRONMENT = {
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "PYTHONHASHSEED",
    "NBGRADER_EXECUTION",
    "MPLBACKEND",
    "JPY_PARENT_PID",
    "JPY_SESSION_NAME",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "ATEN_CPU_CAPABILITY",
    "MKL_ENABLE_INSTRUCTIONS",
    "MKL_CBWR",
    "ONEDNN_MAX_CPU_ISA",
    "PYDEVD_DISABLE_FILE_VALIDATION",
}
# Where the kernel's tools keep their files: its own /tmp, never a folder of the grader.
PRIVATE_FOLDERS = {
    "TMPDIR": "/tmp",
    "IPYTHONDIR": "/tmp/ipython",
    "MPLCONFIGDIR": "/tmp/matplotlib",
    "JUPYTER_RUNTIME_DIR": "/tmp/jupyter",
    "JUPYTER_CONFIG_DIR": "/tmp/jupyter",
    "JUPYTER_DATA_DIR": "/tmp/jupyter",
}

# The system calls the filter denies (EPERM): the kernel's interfaces that no notebook needs and
# that widen what a process can reach. Besides these, the filter denies new namespaces (unshare
# and clone with a namespace flag; clone3), changes of personality, every socket but a Unix one,
# memfd_create where no control group counts its memory, and SYSTEM_V_IPC where the limits of
# System V IPC could not be set (`syscall_filter`).
DENIED = (
    # namespaces: entering another one (unshare and clone only with a namespace flag)
    "setns",
    # other processes: tracing them, reading or writing their memory, taking their files
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "kcmp",
    "pidfd_getfd",
    # the kernel keyring
    "add_key",
    "request_key",
    "keyctl",
    # programs and counters in the kernel, page faults in user space, asynchronous rings
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    # mounts and file handles
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "open_tree_attr",
    "listmount",
    "statmount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "name_to_handle_at",
    "open_by_handle_at",
    "fanotify_init",
    "quotactl",
    "quotactl_fd",
    # kernel modules and the running kernel
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "query_module",
    "get_kernel_syms",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "syslog",
    "acct",
    "swapon",
    "swapoff",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "stime",
    # hardware and obsolete interfaces
    "iopl",
    "ioperm",
    "vm86",
    "vm86old",
    "vhangup",
    "uselib",
    "ustat",
    "sysfs",
    "_sysctl",
    "nfsservctl",
    "lookup_dcookie",
)
# Extended attributes: no notebook sets one, and on tmpfs they are kernel memory. Denied with
# ENOTSUP, as on a file system without them (Python's shutil.copystat then skips them).
XATTR_WRITES = ("setxattr", "lsetxattr", "fsetxattr", "setxattrat")
# setsockopt(SOL_SOCKET, ...) options that enlarge a socket's buffers (SO_SNDBUF, SO_RCVBUF and
# their FORCE forms): denied, so every socket keeps Linux's default buffers (net.core.wmem_default)
# and the memory queued in a sandbox's sockets is bounded by its processes and open files.
SOCKET_BUFFER_OPTIONS = (7, 8, 32, 33)
SOL_SOCKET = 1
# System calls newer than the libseccomp a machine may have (2.5 knows none of these), by their
# number in the table that x86_64 and aarch64 share for every call since Linux 5.1.
NEWER_CALL_NUMBERS = {"statmount": 457, "listmount": 458, "setxattrat": 463, "open_tree_attr": 467}
# What makes System V IPC objects ("ipc": all of System V IPC on machines that multiplex it):
# denied where its limits could not be set; neither torch nor multiprocessing uses it.
SYSTEM_V_IPC = ("shmget", "msgget", "semget", "ipc")
