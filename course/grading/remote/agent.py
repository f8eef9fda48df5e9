"""The grader's agent in a student's kernel: it calls what the grader asks, sends back values.

During autograde the grader sends this file's source and `wire.py`'s to the kernel (`wire` arrives
as a module of its own, passed to `Agent`; neither imports anything of the course), and then one
request per call: call a function the student defined, read an attribute, take an item
or a length, or pin what a name means now (a handle the grader keeps, whatever the name is
bound to later), each as a message on a Jupyter comm. The agent answers on the same comm with the
value, encoded by `course.grading.remote.wire`, or with the exception's type and message (or, for a
value too large for the grader to read, an error that says so). It decides nothing: every verdict
is computed by the grader from these values.
"""

import linecache
import traceback

MAX_MESSAGE = 2000


class ReplyTooLarge(Exception):
    """A value whose reply the grader would drop unread: over its limit on a message."""


class Agent:
    """Perform the grader's requests on the objects of a kernel's namespace."""

    def __init__(self, namespace, wire, max_reply_bytes):
        self.namespace = namespace
        self.wire = wire  # course/grading/remote/wire.py, sent along as a module of its own
        self.max_reply_bytes = max_reply_bytes  # of the comm message's content, as it travels
        self.objects = {}  # handle -> object kept alive for the grader
        self.handles = {}  # id(object) -> handle

    def run(self, request_text):
        """Perform one request and return its JSON reply."""
        try:
            request = self.wire.loads(request_text)
            if request["op"] == "pin":  # a handle, even to data: the object as it is now
                reply = {"value": self.handle_of(self.target(request["target"]))}
            else:
                value = self.perform(request)
                self.check_data_size(value)
                reply = {"value": self.wire.encode(value, self.handle_of)}
        except BaseException as error:  # noqa: BLE001 - every failure goes back to the grader
            reply = {"error": describe(error)}
        return self.within_limit(self.wire.dumps(reply))

    def within_limit(self, text):
        """The reply text, or an error in its place when the grader would drop it unread."""
        size = len(text) + text.count('"') + text.count("\\")  # escaped in the comm message
        if size <= self.max_reply_bytes:
            return text
        return self.wire.dumps({"error": describe(self.too_large(size))})

    def check_data_size(self, value):
        """Raise ReplyTooLarge before encoding a value whose arrays alone are over the limit.

        Their data travels in base64 (4 characters for 3 bytes): a reply that large is refused
        at once, before seconds of encoding that a busy machine would stretch.
        """
        size = 4 * -(-data_bytes(value, self.wire.MAX_DEPTH) // 3)
        if size > self.max_reply_bytes:
            raise self.too_large(size)

    def too_large(self, size):
        """The error sent in place of a reply of `size` bytes."""
        return ReplyTooLarge(
            f"what your code returned takes {size / 2**20:.0f} MiB on its way to the grader, "
            f"which reads at most {self.max_reply_bytes / 2**20:.0f} MiB from your kernel at "
            "a time: is it the value the exercise asks for?"
        )

    def listen(self, comm, message):
        """Answer each request the grader sends on this comm with a reply on the same comm."""

        def answer(request):
            comm.send({"reply": self.run(request["content"]["data"]["request"])})

        comm.on_msg(answer)

    def perform(self, request):
        """The value that one request asks for."""
        target = self.target(request["target"])
        operation = request["op"]
        if operation == "call":
            args = self.wire.decode(request["args"], self.object_of)
            kwargs = self.wire.decode(request["kwargs"], self.object_of)
            return target(*args, **kwargs)
        if operation == "getattr":
            return getattr(target, request["name"])
        if operation == "getitem":
            return target[self.wire.decode(request["key"], self.object_of)]
        if operation == "len":
            return len(target)
        if operation == "list":
            return list(target)
        if operation == "repr":
            return repr(target)[:MAX_MESSAGE]
        raise ValueError(f"unknown operation {operation!r}")

    def target(self, reference):
        """The object a request is about: a name in the kernel's namespace or a handle."""
        if "name" in reference:
            name = reference["name"]
            if name not in self.namespace:
                raise NameError(f"name {name!r} is not defined")
            return self.namespace[name]
        return self.object_of(reference)

    def handle_of(self, obj):
        """The wire form of an object that stays in the kernel."""
        key = id(obj)
        if key not in self.handles:
            self.handles[key] = len(self.objects) + 1
            self.objects[self.handles[key]] = obj
        return {
            "t": "handle",
            "id": self.handles[key],
            "types": [f"{kind.__module__}.{kind.__qualname__}" for kind in type(obj).__mro__],
        }

    def object_of(self, record):
        """The object behind a handle the agent gave out, or behind a name."""
        if "name" in record:
            return self.target(record)
        return self.objects[record["id"]]


def data_bytes(value, levels):
    """The bytes of the tensors and arrays in `value`, and in its containers `levels` deep."""
    if levels < 0:
        return 0
    if isinstance(value, (list, tuple)):
        return sum(data_bytes(item, levels - 1) for item in value)
    if isinstance(value, dict):
        return sum(data_bytes(item, levels - 1) for item in value.values())
    size = getattr(value, "nbytes", 0) if hasattr(value, "dtype") else 0
    return size if type(size) is int else 0


def describe(error):
    """The type names, message and the student's line of an exception, as plain data."""
    kinds = [kind.__name__ for kind in type(error).__mro__]
    where = ""
    for frame, line in traceback.walk_tb(error.__traceback__):
        filename = frame.f_code.co_filename
        if "ipykernel" in filename or filename.startswith("<"):
            text = linecache.getline(filename, line).strip()
            where = f"in {frame.f_code.co_name}, line {line}: {text}" if text else where
    return {"types": kinds, "message": str(error)[:MAX_MESSAGE], "where": where[:MAX_MESSAGE]}
