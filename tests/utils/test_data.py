"""Tests for utils.data: the noisy-squares data set and its loaders."""

import numpy as np
import pytest
import torch

from utils.data import (
    CORNERS,
    SquaresData,
    direction_name,
    make_squares,
    squares_tensors,
)


def signed_area(points: np.ndarray) -> float:
    """Shoelace signed area of a polygon (P, 2): negative when clockwise."""
    x, y = points[:, 0], points[:, 1]
    return 0.5 * float(np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y))


def full_paths(data: SquaresData) -> list[np.ndarray]:
    """Each sequence's real source points followed by its target points, (length + 2, 2)."""
    return [
        np.concatenate([data.source[i, : data.lengths[i]], data.target[i]])
        for i in range(len(data))
    ]


def is_corner(point: np.ndarray) -> bool:
    """Whether point (2,) is one of the four corners."""
    return bool(np.any(np.all(np.isclose(CORNERS, point), axis=1)))


@pytest.mark.parametrize("variable_length", [False, True])
def test_shapes_and_dtypes(variable_length):
    data = make_squares(50, seed=0, variable_length=variable_length)
    length = 3 if variable_length else 2
    assert data.source.shape == (50, length, 2) and data.source.dtype == np.float32
    assert data.target.shape == (50, 2, 2) and data.target.dtype == np.float32
    assert data.lengths.shape == (50,) and data.lengths.dtype == np.int64
    assert data.directions.shape == (50,) and data.directions.dtype == np.int64
    assert len(data) == 50


def test_fixed_length_has_two_source_points():
    data = make_squares(20, seed=1)
    assert np.all(data.lengths == 2)


@pytest.mark.parametrize("variable_length", [False, True])
def test_same_seed_same_data_different_seed_different_data(variable_length):
    first = make_squares(30, seed=7, variable_length=variable_length)
    again = make_squares(30, seed=7, variable_length=variable_length)
    other = make_squares(30, seed=8, variable_length=variable_length)
    for name in ("source", "target", "lengths", "directions"):
        np.testing.assert_array_equal(getattr(first, name), getattr(again, name))
    assert not np.array_equal(first.source, other.source)
    assert not np.array_equal(first.target, other.target)


def test_data_is_frozen():
    data = make_squares(3, seed=0)
    with pytest.raises(AttributeError):
        data.source = np.zeros((3, 2, 2))


def test_both_directions_and_all_corners_occur():
    data = make_squares(200, seed=0, noise=0.0)
    assert set(data.directions.tolist()) == {0, 1}
    starts = {tuple(point) for point in data.source[:, 0].tolist()}
    assert starts == {tuple(corner) for corner in CORNERS.tolist()}


@pytest.mark.parametrize("variable_length", [False, True])
def test_directions_go_round_the_right_way(variable_length):
    data = make_squares(100, seed=3, noise=0.0, variable_length=variable_length)
    for path, direction in zip(full_paths(data), data.directions, strict=True):
        assert all(is_corner(point) for point in path)
        first_four = path[:4]  # (4, 2): the whole square once round
        assert len({tuple(p) for p in first_four.tolist()}) == 4
        area = signed_area(first_four)
        assert area == pytest.approx(-4.0 if direction == 1 else 4.0)
        # Each step turns the same way: the cross product of consecutive steps has one sign.
        steps = np.diff(path, axis=0)  # (P - 1, 2)
        cross = steps[:-1, 0] * steps[1:, 1] - steps[:-1, 1] * steps[1:, 0]  # (P - 2,)
        assert np.all(cross < 0) if direction == 1 else np.all(cross > 0)


def test_noise_is_added_with_the_given_scale():
    noisy = make_squares(2000, seed=0, noise=0.1)
    clean = make_squares(2000, seed=0, noise=0.0)
    residual = np.concatenate(
        [(noisy.source - clean.source).ravel(), (noisy.target - clean.target).ravel()]
    )
    assert residual.std() == pytest.approx(0.1, rel=0.05)
    assert abs(residual.mean()) < 0.01


def test_variable_length_pads_with_zeros_and_wraps_round():
    data = make_squares(300, seed=5, noise=0.0, variable_length=True)
    assert set(data.lengths.tolist()) == {2, 3}
    short = data.lengths == 2
    np.testing.assert_array_equal(data.source[short, 2], 0.0)
    assert np.all(data.source[~short, 2] != 0.0)
    # A three-corner source ends on the fourth corner, then comes back to the first one.
    long = ~short
    np.testing.assert_array_equal(data.target[long, 1], data.source[long, 0])
    # A two-corner source is followed by the two remaining corners.
    for source, target in zip(data.source[short, :2], data.target[short], strict=True):
        corners = {tuple(p) for p in np.concatenate([source, target]).tolist()}
        assert len(corners) == 4


def test_variable_length_repeated_corner_has_fresh_noise():
    data = make_squares(100, seed=5, noise=0.1, variable_length=True)
    long = data.lengths == 3
    assert long.any()
    first_corner, back_again = data.source[long, 0], data.target[long, 1]
    np.testing.assert_allclose(first_corner, back_again, atol=0.8)
    assert not np.any(np.all(first_corner == back_again, axis=1))


def test_make_squares_leaves_global_rng_alone():
    numpy_state = np.random.get_state()
    torch_state = torch.get_rng_state()
    make_squares(10, seed=0, variable_length=True)
    after = np.random.get_state()
    assert numpy_state[0] == after[0] and np.array_equal(numpy_state[1], after[1])
    assert numpy_state[2:] == after[2:]
    assert torch.equal(torch_state, torch.get_rng_state())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 0, "seed": 0}, "n must be a positive integer"),
        ({"n": 2.5, "seed": 0}, "n must be a positive integer"),
        ({"n": True, "seed": 0}, "n must be a positive integer"),
        ({"n": 5, "seed": -1}, "seed must be a non-negative integer"),
        ({"n": 5, "seed": "0"}, "seed must be a non-negative integer"),
        ({"n": 5, "seed": 0, "noise": -0.1}, "noise must be a non-negative number"),
        ({"n": 5, "seed": 0, "noise": float("nan")}, "noise must be a non-negative number"),
        ({"n": 5, "seed": 0, "noise": "big"}, "noise must be a non-negative number"),
        ({"n": 5, "seed": 0, "variable_length": "yes"}, "variable_length must be True or False"),
    ],
)
def test_make_squares_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_squares(**kwargs)


def test_squares_tensors_types_and_copies():
    data = make_squares(8, seed=0, variable_length=True)
    source, target, lengths = squares_tensors(data)
    assert source.dtype == torch.float32 and source.shape == (8, 3, 2)
    assert target.dtype == torch.float32 and target.shape == (8, 2, 2)
    assert lengths.dtype == torch.int64 and lengths.shape == (8,)
    np.testing.assert_array_equal(source.numpy(), data.source)
    source += 1.0
    assert not np.array_equal(source.numpy(), data.source)


def test_squares_tensors_rejects_other_types():
    with pytest.raises(ValueError, match="data must be a SquaresData"):
        squares_tensors((np.zeros((2, 2, 2)), np.zeros((2, 2, 2))))


def test_direction_name():
    assert direction_name(1) == "clockwise"
    assert direction_name(0) == "counter-clockwise"
    assert direction_name(np.int64(1)) == "clockwise"
    assert direction_name(torch.tensor(0)) == "counter-clockwise"


@pytest.mark.parametrize("bad", [2, -1, 0.5, "clockwise", None, True])
def test_direction_name_rejects_other_values(bad):
    with pytest.raises(ValueError, match="direction must be 1 \\(clockwise\\) or 0"):
        direction_name(bad)
