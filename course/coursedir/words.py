"""How the course's commands count things in their summaries."""


def counted(number, noun, plural=None):
    """`number` and `noun`, in the plural unless the number is 1: "1 student", "2 students"."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"
