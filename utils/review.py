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

The grader, Validate and your kernel decide which cells are yours by one rule
(`student_cells`). The tables a cell is read against are in `utils.review_rules`.
"""

import ast
import json
import re
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from utils.bindings import all_bound_names, defined_names, imported_names
from utils.review_rules import (
    BY_A_NAME,
    ESCAPE_ATTRIBUTES,
    FROM_A_STRING,
    NAMED_ACCESS,
    NAMED_ACCESS_CALLS,
    REACHING_BUILTINS,
    READS_ANNOTATIONS,
    RUNS_CODE,
    RUNS_CODE_ARGUMENTS,
    RUNS_CODE_BUILTINS,
    RUNS_CODE_POSITIONS,
    WRITERS,
    private_part,
    reaches,
    runs_code,
)
from utils.shell import as_run, ipython_shell

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
# A replacement field of a format string, and the attributes it reads (`{0.__globals__}`).
FORMAT_FIELD = re.compile(r"\{([^{}]*)\}")
FIELD_ATTRIBUTE = re.compile(r"\.(\w+)")

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



class _Reader(ast.NodeVisitor):
    """Collect a cell's findings: (line, text)."""

    def __init__(self, policy, source, modules, annotated=False):
        self.policy, self.found = policy, []
        self.lab_wide, self.in_exercise = policy.calls_forbidden_in(source)
        self.bound = all_bound_names(source)
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


def findings(source, policy=LabPolicy(), modules=None):
    """What the grader lists about one cell: ["line N: it ...", ...], in line order, no repeats.

    `modules` maps the names that the lab's own cells import (`imported_names`) to what they are.
    A cell is read as IPython runs it (`as_run`: an indented cell, a magic, a shell line). A cell
    over MAX_READ_CHARACTERS is not read (its parse would take ~400 bytes a character).
    """
    if len(source) > MAX_READ_CHARACTERS:
        return [f"line 1: it is too large to be read ({len(source):,} characters; cells of up to "
                f"{MAX_READ_CHARACTERS:,} are read), so what it calls is not listed"]
    source = as_run(source)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []  # the kernel reports it when the cell runs; the cell defines nothing
    own = imported_names([source])
    shadowed = all_bound_names(source) - set(own)
    lab = {name: dotted for name, dotted in (modules or {}).items() if name not in shadowed}
    annotated = any(True for _ in annotation_strings(tree))
    reader = _Reader(policy, source, {**lab, **own}, annotated)
    reader.read(tree)
    return [f"line {line}: {text}" for line, text in sorted(set(reader.found))]


# Which cells are the student's: one rule for the grader, Validate and the student's kernel.


def student_cells(cells, locked):
    """[(index, source)] of each code cell (dicts, as in a notebook's file) that a student wrote.

    A cell is the instructor's when its source is one of `locked` (the sources of the lab's
    locked code cells) but for the whitespace around it, which changes none of the statements it
    runs (IPython removes a cell's leading indent). The grader, Validate and the kernel decide
    so alike, each from the locked cells it sees: the gradebook's, the notebook's, those of the
    notebooks in the kernel's folder. A cell too large to be read is the student's.
    """
    instructors = {source.strip() for source in locked}
    listed = []
    for index, cell in enumerate(cells):
        source = _text(cell.get("source", ""))
        if cell.get("cell_type") != "code":
            continue
        if len(source) > MAX_READ_CHARACTERS or source.strip() not in instructors:
            listed.append((index, source))
    return listed


def student_findings(cells, locked, policy, modules=None):
    """[(index, source, findings)] of each of the `student_cells` that has findings.

    `modules` maps the names the lab's cells import; by default, those the `locked` cells import.
    """
    modules = imported_names(locked) if modules is None else modules
    listed = []
    for index, source in student_cells(cells, locked):
        cell_findings = findings(source, policy, modules)
        if cell_findings:
            listed.append((index, source, cell_findings))
    return listed


def locked_sources(notebook):
    """The sources of the code cells that a lab notebook (a dict) locks."""
    return [
        _text(cell.get("source", ""))
        for cell in notebook.get("cells", [])
        if cell.get("cell_type") == "code" and _locked(cell)
    ]


def _locked(cell):
    """True for a cell that nbgrader locks (a setup or test cell of the lab)."""
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("locked"))


def _text(source):
    """A cell's source as one string (notebooks may store it as a list of lines)."""
    return source if isinstance(source, str) else "".join(source)


# In Validate and in the student's kernel.


def notebook_findings(notebook):
    """[(index, source, findings)] for each code cell with findings that a lab notebook leaves
    to its student (a dict, as read from its file)."""
    policy = LabPolicy.from_metadata(notebook.get("metadata", {}))
    return student_findings(notebook.get("cells", []), locked_sources(notebook), policy)


def lab_notebooks(folder):
    """The lab notebooks in a folder: (policy, sources of their locked code cells).

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
    return policy, [source for nb in notebooks for source in locked_sources(nb)]


def finding_note(cell_findings):
    """What a student sees under a cell with findings."""
    lines = "\n".join(f"  {finding}" for finding in cell_findings)
    return (
        "Your instructor will see these findings about this cell. The tests give your points; "
        "a call or an import the lab forbids breaks its rules all the same, and your instructor "
        f"may take points for it when grading by hand:\n{lines}\n"
    )


def show_findings(folder="."):
    """In IPython, in a lab's folder, show a cell's findings as it runs, as the grader will."""
    shell = ipython_shell()
    policy, locked = lab_notebooks(folder)
    if shell is None or policy is None:  # outside IPython, or outside a lab's folder
        return
    modules = imported_names(locked)

    def before_cell(info):
        cell = {"cell_type": "code", "source": info.raw_cell or ""}
        for _, _, cell_findings in student_findings([cell], locked, policy, modules):
            sys.stdout.write(finding_note(cell_findings))

    for callback in list(shell.events.callbacks["pre_run_cell"]):
        if getattr(callback, "__qualname__", "") == before_cell.__qualname__:
            shell.events.unregister("pre_run_cell", callback)  # the setup cell ran again
    shell.events.register("pre_run_cell", before_cell)
