"""The agent in the kernel: a value too large for the grader comes back as an error."""

import torch

from course.grading.remote import agent, client, wire


def agent_reply(value, max_reply_bytes):
    """The agent's reply, decoded, to a call of a function that returns `value`."""
    kernel = agent.Agent({"answer": lambda: value}, wire, max_reply_bytes)
    no_arguments = {"args": wire.encode((), None), "kwargs": wire.encode({}, None)}
    request = wire.dumps({"op": "call", "target": {"name": "answer"}, **no_arguments})
    return wire.loads(kernel.run(request))


def reply(text):
    """The content of the agent's comm message holding `text` (its JSON reply)."""
    return {"comm_id": "c", "data": {"reply": text}}


def test_a_value_too_large_for_the_grader_comes_back_as_an_error_that_says_so():
    assert agent_reply("x" * 100, max_reply_bytes=200) == {"value": "x" * 100}
    quotes = agent_reply('"' * 100, max_reply_bytes=200)["error"]  # 100 become 400 on the way
    assert quotes["types"][0] == "ReplyTooLarge"
    assert "on its way to the grader, which reads at most 0 MiB" in quotes["message"]
    error = client.remote_exception(quotes)
    assert type(error) is Exception and "is it the value the exercise asks for?" in str(error)


def test_tensors_too_large_for_the_grader_are_refused_before_they_are_encoded():
    import types

    def encode(value, handle_of):
        raise AssertionError("encoded")

    kernel = agent.Agent({"answer": lambda: [{"w": torch.zeros(300)}]}, wire, 1000)
    kernel.wire = types.SimpleNamespace(**{**vars(wire), "encode": encode})
    no_arguments = {"args": wire.encode((), None), "kwargs": wire.encode({}, None)}
    request = wire.dumps({"op": "call", "target": {"name": "answer"}, **no_arguments})
    assert wire.loads(kernel.run(request))["error"]["types"][0] == "ReplyTooLarge"  # 1600 > 1000
    small = agent_reply(torch.ones(150), max_reply_bytes=1000)["value"]  # 600 bytes: 800
    assert torch.equal(wire.decode(small, None), torch.ones(150))
