"""What your instructor will see about a cell you wrote: findings, never a verdict.

The tests compute your points. Beside them, the grader reads each cell you
wrote and lists, for your instructor, what a lab asks you not to use: an import outside the
lab's modules, a call the lab forbids (`torch.softmax` in the softmax lab, and in every lab
the course's own answers in `utils`, such as `utils.transformer.masked_softmax`), a reach into
files, processes or the interpreter, and a call that runs code from a string or a pickle
(`eval`, `typing.get_type_hints`, `timeit`, `pickle.loads`, `np.load(..., allow_pickle=True)`).
A string literal that such a call runs, and a string annotation, is read as code too.
`show_findings()` (run by each lab's setup cell) shows you the same findings, in the same
words, as each of your cells runs, and nbgrader's Validate lists them too. A call or an import
the lab forbids breaks its rules: your instructor may take points for it when grading by hand.

A finding is best effort: it reads the code as written, so code that hides a call is not
listed. It never stops a cell from running.

This module is also the one home of the analysis of the names a cell binds and reads, which
the grader's judge uses to know which names of a test come from your code.
"""

import ast
import json
import re
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

POLICY_KEY = "lab_policy"  # in a lab notebook's metadata, under "course"
MAX_READ_CHARACTERS = 100_000  # of a cell the review reads: a lab's longest answer is 8 000
DEFAULT_MODULES = (
    "torch",
    "numpy",
    "math",
    "typing",
    "dataclasses",
    "functools",
    "itertools",
    "collections",
    "random",
    "time",
    "utils",
    "__future__",
)
# Parts of the allowed modules that reach files, processes or the interpreter, by dotted name.
REACHING = (
    "torch.hub",
    "torch.jit",
    "torch.library",
    "torch.load",
    "torch.multiprocessing",
    "torch.ops",
    "torch.package",
    "torch.save",
    "torch.serialization",
    "torch.from_file",
    "torch.utils.cpp_extension",
    "numpy.ctypeslib",
    "numpy.fromfile",
    "numpy.genfromtxt",
    "numpy.lib.format",
    "numpy.load",
    "numpy.loadtxt",
    "numpy.memmap",
    "numpy.save",
    "numpy.savetxt",
    "numpy.savez",
    "numpy.savez_compressed",
    "numpy.fromregex",
    "numpy.lib.npyio",
    "numpy.rec.fromfile",
    "torch.classes",
    "torch.export.load",
    "torch.export.save",
)
# Modules that an allowed module holds as an attribute (`torch.os`): a way around imports.
REACHING_PARTS = {
    "builtins",
    "copyreg",
    "ctypes",
    "gc",
    "glob",
    "importlib",
    "inspect",
    "io",
    "linecache",
    "marshal",
    "multiprocessing",
    "os",
    "pathlib",
    "pickle",
    "platform",
    "shutil",
    "subprocess",
    "sys",
    "tarfile",
    "tempfile",
    "zipfile",
}
# Builtins that open files or reach the interpreter, when a cell calls them.
REACHING_BUILTINS = {
    "breakpoint",
    "get_ipython",
    "globals",
    "locals",
    "open",
    "vars",
}
# Attributes that lead to frames, globals, code or every class: the ways out of plain code.
ESCAPE_ATTRIBUTES = {
    "__base__",
    "__bases__",
    "__builtins__",
    "__closure__",
    "__code__",
    "__globals__",
    "__import__",
    "__loader__",
    "__mro__",
    "__reduce__",
    "__reduce_ex__",
    "__spec__",
    "__subclasses__",
    "__traceback__",
    "ag_frame",
    "cr_frame",
    "f_back",
    "f_builtins",
    "f_code",
    "f_globals",
    "f_locals",
    "gi_frame",
    "tb_frame",
    "tb_next",
}
NAMED_ACCESS = {"getattr", "setattr", "delattr", "hasattr"}
# A replacement field of a format string, and the attributes it reads (`{0.__globals__}`).
FORMAT_FIELD = re.compile(r"\{([^{}]*)\}")
FIELD_ATTRIBUTE = re.compile(r"\.(\w+)")
# Calls that reach attributes by the names given to them as strings, as getattr does.
NAMED_ACCESS_CALLS = {"operator.attrgetter", "operator.methodcaller"}

# What runs code it is given as data rather than as code: how, and what it does, by dotted name.
# A name matches wherever it appears in a dotted chain (`torch.serialization.pickle.loads`).
FROM_A_STRING = "runs code from a string"
FROM_A_PICKLE = "runs code from a pickle"
FROM_BYTES = "runs code from bytes"
BY_A_NAME = "reaches code named by a string"
UNPICKLES = (FROM_A_PICKLE, "unpickling calls whatever the pickle names")
TIMES = (FROM_A_STRING, "timeit compiles and runs its stmt and setup strings")
PROFILES = (FROM_A_STRING, "the profiler runs a statement from a string")
DEBUGS = (FROM_A_STRING, "the debugger runs a statement from a string")
INTERPRETS = (FROM_A_STRING, "the code module compiles and runs Python source from strings")
SYMPIFIES = (FROM_A_STRING, "sympy evaluates strings with eval")
QUERIES = (FROM_A_STRING, "pandas evaluates an expression from a string")
UNSAFE_YAML = (FROM_A_STRING, "PyYAML's unsafe loading builds any object a document names")
FULL_YAML = (FROM_A_STRING, "PyYAML's full loading builds objects a document names")
REGISTERS = (FROM_A_STRING, "functools evaluates the string annotations of what it registers")
RUNS_CODE = {
    "typing.get_type_hints": (FROM_A_STRING, "typing.get_type_hints evaluates string annotations"),
    "typing.ForwardRef": (FROM_A_STRING, "a ForwardRef evaluates its string when resolved"),
    "typing.evaluate_forward_ref": (FROM_A_STRING, "typing evaluates a string annotation"),
    "annotationlib.ForwardRef": (FROM_A_STRING, "a ForwardRef evaluates its string when resolved"),
    "functools.singledispatch": REGISTERS,
    "functools.singledispatchmethod": REGISTERS,
    "torch.fx": (
        FROM_A_STRING, "torch.fx writes Python source for a graph, whose calls may be named by "
        "strings, and compiles it (GraphModule, symbolic_trace, recompile)"),
    "torch.jit.CompilationUnit": (FROM_A_STRING, "TorchScript compiles source from a string"),
    "torch.utils.benchmark": (
        FROM_A_STRING, "the benchmark Timer compiles and runs its stmt and setup strings"),
    "torch.utils.collect_env": (
        FROM_A_STRING, "collect_env's run runs a shell command from a string"),
    "torch.utils.cpp_extension.load_inline": (
        FROM_A_STRING, "load_inline compiles C++ and CUDA source from strings and loads it"),
    "torch.utils.model_zoo": (FROM_A_PICKLE, "model_zoo's load_url unpickles what it downloads"),
    "torch.distributed": (
        FROM_A_PICKLE, "torch.distributed unpickles the objects and calls other processes send"),
    "numpy.f2py": (FROM_A_STRING, "numpy.f2py compiles Fortran source from strings and loads it"),
    "numpy.testing.extbuild": (
        FROM_A_STRING, "extbuild compiles C source from strings and imports it"),
    "timeit.timeit": TIMES,
    "timeit.repeat": TIMES,
    "timeit.Timer": TIMES,
    "timeit.main": TIMES,
    "code.interact": INTERPRETS,
    "code.InteractiveConsole": INTERPRETS,
    "code.InteractiveInterpreter": INTERPRETS,
    "code.compile_command": INTERPRETS,
    "codeop": (FROM_A_STRING, "codeop compiles Python source from strings"),
    "runpy": (FROM_A_STRING, "runpy runs a module or a script named by a string"),
    "doctest": (FROM_A_STRING, "doctest runs the examples written in docstrings and strings"),
    "cProfile.run": PROFILES,
    "cProfile.runctx": PROFILES,
    "profile.run": PROFILES,
    "profile.runctx": PROFILES,
    "pdb.run": DEBUGS,
    "pdb.runctx": DEBUGS,
    "pdb.runeval": DEBUGS,
    "trace.Trace": (FROM_A_STRING, "trace.Trace's run and runctx run statements from strings"),
    "logging.config": (
        FROM_A_STRING, "logging.config evaluates and imports what a configuration names in "
        "strings, and logging.config.listen takes one from a socket"),
    "sympy.sympify": SYMPIFIES,
    "sympy.S": SYMPIFIES,
    "sympy.parsing": SYMPIFIES,
    "sympy.lambdify": (FROM_A_STRING, "sympy.lambdify writes Python source and runs it"),
    "pandas.eval": QUERIES,
    "pandas.DataFrame.eval": QUERIES,
    "pandas.DataFrame.query": QUERIES,
    "numexpr": (FROM_A_STRING, "numexpr evaluates expressions from strings"),
    "jinja2": (FROM_A_STRING, "jinja2 compiles templates from strings into Python and runs it"),
    "yaml.Loader": UNSAFE_YAML,
    "yaml.UnsafeLoader": UNSAFE_YAML,
    "yaml.unsafe_load": UNSAFE_YAML,
    "yaml.unsafe_load_all": UNSAFE_YAML,
    "yaml.FullLoader": FULL_YAML,
    "yaml.full_load": FULL_YAML,
    "yaml.full_load_all": FULL_YAML,
    "pickle.load": UNPICKLES,
    "pickle.loads": UNPICKLES,
    "pickle.Unpickler": UNPICKLES,
    "_pickle.load": UNPICKLES,
    "_pickle.loads": UNPICKLES,
    "_pickle.Unpickler": UNPICKLES,
    "cPickle.load": UNPICKLES,
    "cPickle.loads": UNPICKLES,
    "shelve.open": (FROM_A_PICKLE, "a shelf unpickles each value it reads"),
    "shelve.Shelf": (FROM_A_PICKLE, "a shelf unpickles each value it reads"),
    "shelve.DbfilenameShelf": (FROM_A_PICKLE, "a shelf unpickles each value it reads"),
    "pandas.read_pickle": UNPICKLES,
    "joblib.load": UNPICKLES,
    "dill.load": UNPICKLES,
    "dill.loads": UNPICKLES,
    "cloudpickle.load": UNPICKLES,
    "cloudpickle.loads": UNPICKLES,
    "marshal.load": (FROM_BYTES, "marshal makes code objects from bytes"),
    "marshal.loads": (FROM_BYTES, "marshal makes code objects from bytes"),
    "importlib": (BY_A_NAME, "importlib imports modules named by strings, running their code"),
    "pydoc.locate": (BY_A_NAME, "pydoc imports what a dotted name in a string names"),
    "pkgutil.resolve_name": (BY_A_NAME, "pkgutil imports what a dotted name in a string names"),
    "unittest.mock.patch": (BY_A_NAME, "mock replaces what a dotted name in a string names"),
}
# The course's own answers: what `utils` holds that computes a lab's exercise (the lectures' models
# and their parts). A cell a student writes calls none of them, in every lab, but those its lab
# gives (`given` in its policy): the tests use them as references.
COURSE_ANSWERS = frozenset({
    "utils.encoder_decoder.AttentionSublayer",
    "utils.encoder_decoder.DecoderLayer",
    "utils.encoder_decoder.DecoderStack",
    "utils.encoder_decoder.EncoderLayer",
    "utils.encoder_decoder.EncoderStack",
    "utils.encoder_decoder.Lesson06Attention",
    "utils.encoder_decoder.Seq2SeqTransformer",
    "utils.encoder_decoder.feed_forward",
    "utils.encoder_decoder.to_torch",
    "utils.encoder_decoder.train_squares",
    "utils.gpt.Block",
    "utils.gpt.LayerCache",
    "utils.gpt.RotarySelfAttention",
    "utils.gpt.TinyGPT",
    "utils.gpt.generate",
    "utils.gpt.masked_attention",
    "utils.gpt.next_token_probabilities",
    "utils.gpt.sample_next",
    "utils.gpt.sequence_loss",
    "utils.gpt.train_gpt",
    "utils.interactive.attend_one",
    "utils.interactive.bilinear_matrix",
    "utils.interactive.masked_weights",
    "utils.interactive.online_softmax_trace",
    "utils.interactive.padding_and_causal_mask",
    "utils.interactive.sampling_distribution",
    "utils.interactive.temperature_weights",
    "utils.recipe.train_seq2seq",
    "utils.seq2seq.Encoder",
    "utils.seq2seq.last_step",
    "utils.seq2seq.source_mask",
    "utils.training.fit",
    "utils.training.one_cycle_steps",
    "utils.transformer.RotaryEncoderLayer",
    "utils.transformer.TinyCausalLM",
    "utils.transformer.causal_mask",
    "utils.transformer.masked_softmax",
    "utils.transformer.rope_frequencies",
    "utils.transformer.rotate",
})
# Builtins that run code from a string, when a cell calls them.
RUNS_CODE_BUILTINS = {
    "eval": (FROM_A_STRING, "eval evaluates an expression written in a string"),
    "exec": (FROM_A_STRING, "exec runs statements written in a string"),
    "compile": (FROM_A_STRING, "compile makes code from a string, for eval and exec to run"),
    "__import__": (BY_A_NAME, "__import__ imports a module named by a string, running its code"),
}
# Arguments that make a call run code from a string or a pickle: keyword -> how, what it does,
# and the constants that keep it from doing so.
RUNS_CODE_ARGUMENTS = {
    "eval_str": (FROM_A_STRING, "eval_str=True evaluates string annotations", (False, None)),
    "allow_pickle": (
        FROM_A_PICKLE, "allow_pickle=True lets NumPy unpickle object arrays", (False, None)),
    "weights_only": (
        FROM_A_PICKLE, "weights_only=False lets torch.load unpickle any object", (True, None)),
    "pickle_module": (
        FROM_A_PICKLE, "a pickle_module makes torch.load unpickle any object", (None,)),
}
# The same arguments given by position: dotted name of a call -> (position, keyword).
RUNS_CODE_POSITIONS = {"numpy.load": (2, "allow_pickle"), "torch.load": (2, "pickle_module")}
# Calls whose allow_pickle writes a pickle rather than reading one, by their name's start.
WRITERS = ("save", "write")
# Names that evaluate string annotations only: listed in a cell that writes one.
READS_ANNOTATIONS = {"functools.singledispatch", "functools.singledispatchmethod"}


# The names a cell binds and reads.


class _Bindings(ast.NodeVisitor):
    """The names a piece of code binds in its own scope, and the names it reads anywhere."""

    def __init__(self):
        self.bound, self.read = set(), set()

    def visit_Name(self, node):
        (self.read if isinstance(node.ctx, ast.Load) else self.bound).add(node.id)

    def visit_FunctionDef(self, node):
        self.bound.add(node.name)
        self.read |= free_names_of(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self.bound.add(node.name)
        self.read |= free_names_of(node)

    def visit_Lambda(self, node):
        self.read |= free_names_of(node)

    def visit_alias(self, node):
        if node.name != "*":
            self.bound.add((node.asname or node.name).split(".")[0])

    def visit_ExceptHandler(self, node):
        if node.name:
            self.bound.add(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node):
        if node.name:
            self.bound.add(node.name)
        self.generic_visit(node)

    visit_MatchStar = visit_MatchAs


def free_names_of(node):
    """The names read inside `node` (a function, class or lambda) that it does not bind itself."""
    read, bound = set(), set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            (read if isinstance(inner.ctx, ast.Load) else bound).add(inner.id)
        elif isinstance(inner, ast.arg):
            bound.add(inner.arg)
        elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(inner.name)
        elif isinstance(inner, ast.alias) and inner.name != "*":
            bound.add((inner.asname or inner.name).split(".")[0])
    return read - bound


def _bindings(source):
    """The _Bindings of a cell's top level, or None when it is not valid Python."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    found = _Bindings()
    found.visit(tree)
    return found


def bound_names(source):
    """Names that the top level of a cell binds, in any way (def, class, import, for, with, ...)."""
    found = _bindings(source)
    return set() if found is None else found.bound


def free_names(source):
    """Names a cell reads that its top level does not bind itself."""
    found = _bindings(source)
    return set() if found is None else found.read - found.bound


def defined_names(source):
    """Names of the functions and classes a cell defines at its top level."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return set()
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {node.name for node in body if isinstance(node, kinds)}


# A lab's policy.


@dataclass(frozen=True)
class LabPolicy:
    """What a lab asks students not to use: its modules, and the calls it forbids.

    `forbidden_in` maps the name of a function or class an exercise asks for to the calls
    forbidden in the cell that defines it (the references that exercise reimplements). Every
    lab forbids the COURSE_ANSWERS but those it gives its students to build with (`given`).
    """

    allowed_modules: tuple = DEFAULT_MODULES
    forbidden_calls: frozenset = frozenset()
    forbidden_in: dict = field(default_factory=dict)
    given: frozenset = frozenset()

    @classmethod
    def from_metadata(cls, metadata):
        """The policy in a notebook's metadata (`course.lab_policy`), or the default one."""
        policy = metadata.get("course", {}).get(POLICY_KEY)
        if policy is None:
            return cls()
        unknown = set(policy) - {"allowed_modules", "forbidden_calls", "forbidden_in", "given"}
        if unknown:
            raise ValueError(f"a lab policy has allowed_modules, forbidden_calls, forbidden_in, "
                             f"given, not {sorted(unknown)}")
        return cls(
            allowed_modules=tuple(policy.get("allowed_modules", DEFAULT_MODULES)),
            forbidden_calls=frozenset(policy.get("forbidden_calls", ())),
            forbidden_in={name: frozenset(calls)
                          for name, calls in policy.get("forbidden_in", {}).items()},
            given=frozenset(policy.get("given", ())),
        )

    def course_answer(self, dotted):
        """The name of the course's answer that a dotted name is or holds, or None if given."""
        for answer in COURSE_ANSWERS - self.given:
            if dotted == answer or dotted.startswith(f"{answer}."):
                return answer.rsplit(".", 1)[1]
        return None

    def calls_forbidden_in(self, source):
        """(lab-wide forbidden calls, those forbidden in this cell's exercise) for a cell."""
        in_exercise = set().union(
            *(self.forbidden_in.get(name, ()) for name in defined_names(source))
        )
        return self.forbidden_calls, frozenset(in_exercise) - self.forbidden_calls

    def allows(self, module):
        """True when a module, by its full dotted name, is one of the lab's or inside one."""
        return any(module == allowed or module.startswith(f"{allowed}.")
                   for allowed in self.allowed_modules)


# Findings.


def reaches(dotted):
    """True when a dotted name leads to files, processes or the interpreter."""
    parts = dotted.split(".")
    inside = any(dotted == name or dotted.startswith(f"{name}.") for name in REACHING)
    return inside or bool(REACHING_PARTS & set(parts[1:]))


def runs_code(dotted):
    """The longest name of RUNS_CODE that a dotted name holds as consecutive parts, or None."""
    parts = dotted.split(".")
    held = [name for name in RUNS_CODE if _holds(parts, name.split("."))]
    return max(held, key=len, default=None)


def _holds(parts, run):
    """True when the parts `run` appear in `parts`, one after the other."""
    return any(parts[start:start + len(run)] == run for start in range(len(parts) - len(run) + 1))


def private_part(dotted):
    """The first private part (`_C`) of a dotted name below its module, or None.

    Dunders are public (`torch.__version__`, `nn.Module.__init__`), but for `__dict__`, which
    reaches every private part.
    """
    return next((part for part in dotted.split(".")[1:] if _private(part)), None)


def _private(name):
    """True for `_name` and `__dict__`; False for other dunders and public names."""
    dunder = name.startswith("__") and name.endswith("__")
    return name == "__dict__" or (name.startswith("_") and not dunder)


class _Reader(ast.NodeVisitor):
    """Collect a cell's findings: (line, text)."""

    def __init__(self, policy, source, modules, annotated=False):
        self.policy, self.found = policy, []
        self.lab_wide, self.in_exercise = policy.calls_forbidden_in(source)
        self.bound = _all_bound(source)
        self.modules = dict(modules)  # name -> full dotted name of what it was imported as
        self.annotated = annotated  # the cell writes a string annotation
        self.checked = set()  # attribute nodes checked as part of a longer dotted name

    def read(self, tree):
        """Read each statement of a tree, then the string annotations in it as code."""
        for statement in tree.body:
            try:
                self.visit(statement)
            except RecursionError:
                self.note(statement, "it nests its code too deeply to be read, so what it "
                                     "calls is not listed")
        for constant in annotation_strings(tree):
            self.read_string(constant)

    def read_string(self, constant):
        """Read a string literal that may run as code as if it were code of the cell, in place."""
        try:
            tree = ast.parse(textwrap.dedent(constant.value))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return  # not Python: it runs nothing
        ast.increment_lineno(tree, constant.lineno - 1)
        self.read(tree)

    def note(self, node, text):
        """Record a finding about `node`'s line."""
        self.found.append((node.lineno, text))

    def forbidden(self, node, name):
        """Note a call of `name` when the lab or this exercise forbids it."""
        if name in self.in_exercise:
            self.note(node, f"it calls {name}, which this exercise forbids")
        elif name in self.lab_wide:
            self.note(node, f"it calls {name}, which this lab forbids")

    def check_dotted(self, node, dotted, imported=False):
        """Note an import or a use of an imported name that leaves the lab's modules."""
        answer = self.policy.course_answer(dotted)
        if answer is not None:
            self.note(node, f"it calls {answer}, which this lab forbids")
        runs = self.runs_code(node, dotted)
        if not self.policy.allows(dotted):
            if imported:
                self.note(node, f"it imports {dotted}, which this lab does not use")
        elif runs:
            return
        elif reaches(dotted):
            self.note(node, f"it uses {dotted}, which reaches files, processes or the interpreter")
        elif private_part(dotted):
            self.note(node, f"it uses {dotted}, a private part of {dotted.split('.')[0]}")

    def visit_Import(self, node):
        for alias in node.names:
            self.check_dotted(node, alias.name, imported=True)

    def runs_code(self, node, dotted):
        """Note a name that runs code from a string or a pickle; True when it is one."""
        name = runs_code(dotted)
        if name is None or (name in READS_ANNOTATIONS and not self.annotated):
            return False
        how, what = RUNS_CODE[name]
        self.note(node, f"it uses {dotted}, which {how}: {what}")
        return True

    def visit_ImportFrom(self, node):
        if node.level or not node.module:
            self.note(node, "it imports from a relative module, which this lab does not use")
            return
        if any(alias.name == "*" for alias in node.names):
            self.note(node, f"it imports every name of {node.module}, which hides what it calls")
        for alias in node.names:
            dotted = node.module if alias.name == "*" else f"{node.module}.{alias.name}"
            self.check_dotted(node, dotted, imported=True)
            self.forbidden(node, alias.name)

    def visit_Attribute(self, node):
        if node.attr in ESCAPE_ATTRIBUTES:
            self.note(node, f"it uses .{node.attr}, which reaches the interpreter's internals")
        self.forbidden(node, node.attr)
        dotted = None if node in self.checked else self.dotted(node)
        if dotted is not None and isinstance(node.ctx, ast.Load):
            self.check_dotted(node, dotted)
            self.checked.update(_attribute_chain(node.value))  # its shorter names say no more
        elif dotted is not None:
            self.note(node, f"it changes {dotted}, which every cell shares")
        self.generic_visit(node)

    def dotted(self, node):
        """The full dotted name of a name or an attribute chain rooted at an import, or None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.modules:
            return ".".join([self.modules[node.id], *reversed(parts)])
        return None

    def visit_Call(self, node):
        function = node.func
        builtin = function.id if isinstance(function, ast.Name) else None
        if builtin in self.bound:
            builtin = None
        if builtin in RUNS_CODE_BUILTINS:
            how, what = RUNS_CODE_BUILTINS[builtin]
            self.note(node, f"it calls {builtin}, which {how}: {what}")
        elif builtin in REACHING_BUILTINS:
            self.note(node, f"it calls {builtin}, which reaches the interpreter or files")
        elif builtin in NAMED_ACCESS:
            self.named_access(node, builtin, node.args[1:2])
            self.named_attribute(node, builtin, node.args[:2])
        called = self.called(function)
        if called in NAMED_ACCESS_CALLS:
            self.named_access(node, called, node.args[:1] if "method" in called else node.args)
        self.check_arguments(node, called)
        if builtin in RUNS_CODE_BUILTINS or _runs_strings(called):
            for argument in [*node.args, *(keyword.value for keyword in node.keywords)]:
                if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                    self.read_string(argument)
        self.generic_visit(node)

    def called(self, function):
        """The full dotted name of what a call calls, when it is rooted at an import, or None."""
        if isinstance(function, ast.Name):
            return self.modules.get(function.id)
        return self.dotted(function)

    def named_access(self, node, call, names):
        """Note a call that reaches attributes by name: a forbidden name, or one not literal."""
        if names and all(_public_literal([name]) for name in names):
            for name in names:
                for part in name.value.split("."):
                    self.forbidden(node, part)
        else:
            self.note(node, f"it calls {call} with a name that is not a plain literal one, "
                            "which can reach anything")

    def named_attribute(self, node, call, arguments):
        """Check `getattr(module, "name")` as `module.name`, and `setattr` on it as a change."""
        owner = self.dotted(arguments[0]) if len(arguments) == 2 else None
        if owner is None or not _public_literal(arguments[1:]):
            return
        dotted = f"{owner}.{arguments[1].value}"
        if call in ("setattr", "delattr"):
            self.note(node, f"it changes {dotted}, which every cell shares")
        else:
            self.check_dotted(node, dotted)

    def check_arguments(self, node, called):
        """Note the arguments that make a call run code from a string or a pickle."""
        given = {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg}
        position, keyword = RUNS_CODE_POSITIONS.get(called, (None, None))
        if position is not None and len(node.args) > position:
            given.setdefault(keyword, node.args[position])
        name = _called_name(node.func)
        for keyword, value in given.items():
            if keyword not in RUNS_CODE_ARGUMENTS or name.startswith(WRITERS):
                continue
            how, what, off = RUNS_CODE_ARGUMENTS[keyword]
            if not (isinstance(value, ast.Constant) and value.value in off):
                self.note(node, f"it calls {called or name} with {keyword}, which {how}: {what}")

    def visit_Name(self, node):
        if node.id in ESCAPE_ATTRIBUTES and node.id not in self.bound:
            self.note(node, f"it uses {node.id}, which reaches the interpreter's internals")
        answer = self.policy.course_answer(self.modules.get(node.id, ""))
        if answer is not None and isinstance(node.ctx, ast.Load) and node.id not in self.bound:
            self.note(node, f"it calls {answer}, which this lab forbids")

    def visit_Constant(self, node):
        if not isinstance(node.value, str):
            return
        for field_text in FORMAT_FIELD.findall(node.value):
            for name in set(FIELD_ATTRIBUTE.findall(field_text)) & ESCAPE_ATTRIBUTES:
                self.note(node, f"it uses .{name} in a format string, which reaches the "
                                "interpreter's internals")


def _all_bound(source):
    """Every name bound anywhere in a cell: arguments, locals, definitions, imports."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def _attribute_chain(node):
    """The attribute nodes of a chain: `torch.utils.data` and `torch.utils` of the first."""
    chain = []
    while isinstance(node, ast.Attribute):
        chain.append(node)
        node = node.value
    return chain


def _public_literal(arguments):
    """True when the one argument given is a string literal that names public attributes."""
    if len(arguments) != 1 or not isinstance(arguments[0], ast.Constant):
        return False
    name = arguments[0].value
    return isinstance(name, str) and not any(part.startswith("_") for part in name.split("."))


def _runs_strings(called):
    """True when a call, by its dotted name, runs code from or reaches code named by a string."""
    name = runs_code(called) if called else None
    return name is not None and RUNS_CODE[name][0] in (FROM_A_STRING, BY_A_NAME)


def _called_name(function):
    """The last name of what a call calls (`load` of `np.load`), or "" for any other callee."""
    if isinstance(function, ast.Attribute):
        return function.attr
    return function.id if isinstance(function, ast.Name) else ""


def annotation_strings(tree):
    """The string literals in a tree's annotations: code that typing and functools evaluate."""
    for node in ast.walk(tree):
        for annotation in _annotations(node):
            for inner in ast.walk(annotation):
                if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                    yield inner


def _annotations(node):
    """The annotations a node holds itself: an argument's, a function's return, a variable's."""
    if isinstance(node, (ast.arg, ast.AnnAssign)):
        return [node.annotation] if node.annotation else []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [node.returns] if node.returns else []
    return []


def imported_names(sources):
    """name -> full dotted name of each module or object that these cells' imports bind."""
    modules = {}
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    modules[alias.asname or top] = alias.name if alias.asname else top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return modules


def findings(source, policy=LabPolicy(), modules=None):
    """What the grader lists about one cell: ["line N: it ...", ...], in line order, no repeats.

    `modules` maps the names that the lab's own cells import (`imported_names`) to what they are.
    A cell over MAX_READ_CHARACTERS is not read (its parse would take ~400 bytes a character).
    """
    if len(source) > MAX_READ_CHARACTERS:
        return [f"line 1: it is too large to be read ({len(source):,} characters; cells of up to "
                f"{MAX_READ_CHARACTERS:,} are read), so what it calls is not listed"]
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []  # the kernel reports it when the cell runs; the cell defines nothing
    own = imported_names([source])
    shadowed = _all_bound(source) - set(own)
    lab = {name: dotted for name, dotted in (modules or {}).items() if name not in shadowed}
    annotated = any(True for _ in annotation_strings(tree))
    reader = _Reader(policy, source, {**lab, **own}, annotated)
    reader.read(tree)
    return [f"line {line}: {text}" for line, text in sorted(set(reader.found))]


# In the student's kernel.


def lab_notebooks(folder):
    """The lab notebooks in a folder: (policy, sources of their locked code cells, stripped).

    The policy is None when no notebook there has one (not a lab's folder).
    """
    notebooks = []
    for path in sorted(Path(folder).glob("*.ipynb")):
        try:
            notebooks.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    with_policy = [nb for nb in notebooks if POLICY_KEY in nb.get("metadata", {}).get("course", {})]
    policy = LabPolicy.from_metadata(with_policy[0]["metadata"]) if with_policy else None
    return policy, set().union(*(locked_sources(nb) for nb in notebooks))


def locked_sources(notebook):
    """The sources, stripped, of the code cells that a lab notebook (a dict) locks."""
    return {
        _text(cell.get("source", "")).strip()
        for cell in notebook.get("cells", [])
        if cell.get("cell_type") == "code" and _locked(cell)
    }


def notebook_findings(notebook):
    """[(index, source, findings)] for each code cell with findings that a lab notebook leaves
    to its student (a dict, as read from its file)."""
    policy = LabPolicy.from_metadata(notebook.get("metadata", {}))
    locked = locked_sources(notebook)
    modules = imported_names(locked)
    listed = []
    for index, cell in enumerate(notebook.get("cells", [])):
        source = _text(cell.get("source", ""))
        if cell.get("cell_type") != "code" or source.strip() in locked:
            continue
        cell_findings = findings(source, policy, modules)
        if cell_findings:
            listed.append((index, source, cell_findings))
    return listed


def _locked(cell):
    """True for a cell that nbgrader locks (a setup or test cell of the lab)."""
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("locked"))


def _text(source):
    """A cell's source as one string (notebooks may store it as a list of lines)."""
    return source if isinstance(source, str) else "".join(source)


def finding_note(cell_findings):
    """What a student sees under a cell with findings."""
    lines = "\n".join(f"  {finding}" for finding in cell_findings)
    return (
        "Your instructor will see these findings about this cell. The tests give your points; "
        "a call or an import the lab forbids breaks its rules all the same, and your instructor "
        f"may take points for it when grading by hand:\n{lines}\n"
    )


def ipython_shell():
    """The IPython shell this code runs in, or None (plain Python, or IPython not installed)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def show_findings(folder="."):
    """In IPython, in a lab's folder, show a cell's findings as it runs, as the grader will."""
    shell = ipython_shell()
    policy, locked = lab_notebooks(folder)
    if shell is None or policy is None:  # outside IPython, or outside a lab's folder
        return
    modules = imported_names(locked)

    def before_cell(info):
        source = info.raw_cell or ""
        if source.strip() in locked:
            return
        cell_findings = findings(source, policy, modules)
        if cell_findings:
            sys.stdout.write(finding_note(cell_findings))

    for callback in list(shell.events.callbacks["pre_run_cell"]):
        if getattr(callback, "__qualname__", "") == before_cell.__qualname__:
            shell.events.unregister("pre_run_cell", callback)  # the setup cell ran again
    shell.events.register("pre_run_cell", before_cell)
