"""The substance measure: renaming, respelling or wrapping a lecture cell does not hide it."""

from substance import cell_units, exercise_share, function_units, notebook_units

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
