"""A student's binding of a locked helper's name in lab 04, in every form, after the locked cell.

Lab 04's tests call `set_parameters` and `parameter_gradients` of `utils.grading`, which a locked
cell imports; each form below binds one of their names (or both) in the first solution cell. The
tests must use the instructor's helpers all the same: every cell scores what the honest
student's does.
"""

LAB = "04_additive_scoring"
BROKEN = "lambda *args, **kwargs: 1 / 0"
REBINDS_HELPER = {
    "def": "def set_parameters(*args, **kwargs):\n    return 1 / 0\n",
    "class": "class parameter_gradients:\n    pass\n",
    "import": "from math import pi as set_parameters\n",
    "for": f"for set_parameters in [{BROKEN}]:\n    pass\n",
    "with": "import contextlib\nwith contextlib.nullcontext(0) as parameter_gradients:\n    pass\n",
    "walrus": f"if (set_parameters := {BROKEN}):\n    pass\n",
    "except": "try:\n    1 / 0\nexcept ZeroDivisionError as set_parameters:\n    pass\n"
    "set_parameters = None\n",
    "tuple": f"set_parameters, (parameter_gradients, _) = {BROKEN}, ({BROKEN}, 0)\n",
    "module_attribute": f"import utils.grading\nutils.grading.set_parameters = {BROKEN}\n"
    f"utils.grading.parameter_gradients = {BROKEN}\n",
}
