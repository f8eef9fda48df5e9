"""The substance measure: renaming, respelling or wrapping a lecture cell does not hide it."""

import pytest
from catalogue import ASSIGNMENTS
from substance import (
    cell_units,
    exercise_share,
    function_units,
    module_units,
    notebook_units,
    visible_test_units,
)
from test_course import (
    REBUILDS_UTILS,
    SUBSTANCE_LIMIT,
    WARM_UP_POINTS,
    exercise_shares,
    generated,
    shown_where,
)

from course.coursedir import notebooks, paths

LECTURE_CELL = """
lengths = torch.tensor([5, 3])
mask = torch.arange(seq_len)[None, :] < lengths[:, None]
print(mask)
"""


def share_of(solution, lecture=LECTURE_CELL):
    """The exercise share of the functions of `solution` against one lecture cell."""
    functions = [unit for unit in function_units(solution) if unit[0] != "__init__"]
    return exercise_share(functions, cell_units(lecture, "cell"))[0]


def test_a_lecture_cell_with_other_names_is_a_copy():
    renamed = """
def padding(sizes, width):
    return torch.arange(width)[None, :] < sizes[:, None]
"""
    assert share_of(renamed) == 1.0


def test_a_lecture_cell_respelled_and_wrapped_in_checks_is_a_copy():
    wrapped = """
def padding_mask(lengths, max_length=None):
    lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1:
        raise ValueError("lengths must have shape (N,)")
    if max_length is None:
        max_length = int(lengths.max())
    positions = torch.arange(max_length)
    return positions.unsqueeze(0) < lengths.unsqueeze(1)
"""
    assert share_of(wrapped) == 1.0


def test_a_layer_in_a_module_is_the_lecture_s_product():
    lecture = "def scores(q, k, w_q, w_k, v):\n    return torch.tanh(q @ w_q + k @ w_k) @ v\n"
    module = """
class Score(nn.Module):
    def forward(self, query, keys):
        hidden = torch.tanh(self.w_q(query) + self.w_k(keys))
        return self.v(hidden)
"""
    assert share_of(module, lecture) == 1.0


def test_the_next_step_of_a_lecture_cell_is_not_a_copy():
    sliding_window = """
def window_mask(n_queries, n_keys, window):
    offset = n_keys - n_queries
    query_at = torch.arange(n_queries)[:, None] + offset
    distance = query_at - torch.arange(n_keys)[None, :]
    return (distance >= 0) & (distance < window)
"""
    assert share_of(sliding_window) < 0.5


def test_a_parameter_updated_by_real_work_counts_as_work():
    lecture = "context = torch.tanh(hidden @ w_q)\n"
    step = """
def step(x, hidden):
    hidden = cell(torch.cat([x, hidden], dim=-1), hidden)
    return torch.tanh(hidden @ w_q)
"""
    assert share_of(step, lecture) < 0.5


def test_a_function_that_the_lab_gives_does_not_count():
    given = """
class Score(nn.Module):
    def score(self, query, keys):
        ### BEGIN SOLUTION
        return torch.cumsum(query, dim=0) - keys.flip(0) * 3
        ### END SOLUTION

    def forward(self, query, keys):
        return torch.arange(seq_len)[None, :] < lengths[:, None]
"""
    assert [name for name, _ in function_units(given)] == ["score"]


def test_a_lab_s_helper_cell_that_holds_the_answer_is_found():
    exercise = """
def decoder_step(cell, output, x, hidden):
    ### BEGIN SOLUTION
    new = cell(torch.cat([x, hidden], dim=-1), hidden)
    return output(torch.cat([hidden, new], dim=-1)), new
    ### END SOLUTION
"""
    helper = """
@in_kernel
def step_by_hand(decoder, x, hidden):
    state = decoder.cell(torch.cat([x, hidden], dim=-1), hidden)
    return decoder.output(torch.cat([hidden, state], dim=-1)), state
"""
    cells = [{"cell_type": "markdown", "source": exercise}, {"cell_type": "code", "source": helper}]
    units = notebook_units(cells, "lab")
    share, found = exercise_share(function_units(exercise), units)
    assert share > 0.8  # only the calls of the decoder's layers are spelled otherwise
    assert found[0][2] == "lab cell 1 step_by_hand"


def test_a_visible_test_reads_the_reference_its_helper_computes():
    exercise = """
def next_token_loss(logits, tokens):
    ### BEGIN SOLUTION
    return (torch.logsumexp(logits[:, :-1], -1) - logits[:, :-1].gather(
        -1, tokens[:, 1:, None])[..., 0]).mean()
    ### END SOLUTION
"""
    helper = """
def reference_loss(logits, tokens):
    return (torch.logsumexp(logits[:, :-1], -1) - logits[:, :-1].gather(
        -1, tokens[:, 1:, None])[..., 0]).mean()
"""
    test = "check_close(next_token_loss(LOGITS, TOKENS), reference_loss(LOGITS, TOKENS))\n"
    cells = [{"cell_type": "code", "source": helper},
             {"cell_type": "code", "source": test, "metadata": {"nbgrader": {"grade": True}}}]
    share, found = exercise_share(function_units(exercise), visible_test_units(cells, "lab"))
    assert share == 1.0 and found[0][2] == "lab test cell 1"
    fixed = "check_close(next_token_loss(LOGITS, TOKENS), torch.tensor(1.2345))\n"
    cells[1]["source"] = fixed
    assert exercise_share(function_units(exercise), visible_test_units(cells, "lab"))[0] < 0.5


def test_a_function_of_utils_is_a_unit():
    module = "def masked(scores, allowed):\n    return scores.masked_fill(~allowed, 0.0)\n"
    assert [name for name, _ in module_units(module, "utils/x.py")] == ["utils/x.py masked"]


# A lab's exercises against what else a student reads: each visible test cell of its lab with the
# helpers it calls (a reference computed there gives the answer away: visible tests compare with
# fixed numbers or properties, hidden tests keep the references), and every function of utils/.
# The limit is the lecture measure's. Exercises of at most WARM_UP_POINTS are exempt: they are
# warm-ups, and their few tokens meet runs of any long module by the grammar alone.
# Exercises that utils/ still holds, with their share when listed: each is to ask for more than
# the course's model, then leave this set (the test fails for one that no longer restates it).
KNOWN_IN_UTILS = {
    ("05_masks", "masked_softmax"): 0.73,  # utils.transformer.masked_softmax, the lectures' own
    ("06_seq2seq_attention", "seq2seq_with_attention"): 0.52,  # Lesson06Attention.forward
}


def utils_units():
    """Token units of every function of utils/."""
    return [
        unit
        for path in sorted((paths.ROOT / "utils").glob("*.py"))
        for unit in module_units(path.read_text(encoding="utf-8"), f"utils/{path.name}")
    ]


def over_the_limit(assignment, shown, prefix, known=frozenset(), exempt=()):
    """The exercises of more than WARM_UP_POINTS that `shown` holds half of, and the known ones
    that it no longer does; `exempt` names exercises that are not measured."""
    copies, rewritten = [], []
    for grade_id, (share, found, points) in exercise_shares(assignment, shown).items():
        listed = (assignment, grade_id) in known
        measured = points > WARM_UP_POINTS and grade_id not in exempt
        if share >= SUBSTANCE_LIMIT and measured and not listed:
            copies.append(shown_where(grade_id, share, found, points, prefix))
        if share < SUBSTANCE_LIMIT and listed:
            rewritten.append(f"{grade_id} ({share:.0%})")
    return copies, rewritten


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_visible_test_holds_an_exercise_s_substance(assignment):
    cells = notebooks.read(generated("release", assignment)).cells
    copies, _ = over_the_limit(assignment, visible_test_units(cells, "lab"), "")
    assert not copies, f"{assignment}: exercises that a visible test computes: {copies}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_utils_holds_no_exercise_s_substance(assignment):
    rebuilt = REBUILDS_UTILS.get(assignment, ())  # a model of utils/ by design: its reference
    copies, rewritten = over_the_limit(assignment, utils_units(), "", KNOWN_IN_UTILS, rebuilt)
    assert not copies, f"{assignment}: exercises that utils/ already holds: {copies}"
    assert not rewritten, (
        f"{assignment}: no longer restates utils/, remove from KNOWN_IN_UTILS: {rewritten}"
    )
