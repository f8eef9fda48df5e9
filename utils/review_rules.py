"""The rules of a cell's review: what reaches files, processes or the interpreter, and what runs
code it is given as data (a string, a pickle, bytes) rather than as code, by dotted name.

`utils.review` reads a cell against these tables; a name matches a table wherever it appears in
a dotted chain (`torch.serialization.pickle.loads`).
"""

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
