"""Execute notebooks in place, storing their outputs: ``python -m course.coursedir.execute PATH``.

A folder stands for every notebook in it. Cells run in order in a fresh kernel whose working
directory is the notebook's folder; a cell that raises stops the run unless it is tagged
``raises-exception``.
"""

import argparse
from pathlib import Path

from course.coursedir import notebooks


def notebook_paths(targets):
    """Expand folders into the notebooks they hold, in order."""
    found = []
    for target in map(Path, targets):
        found.extend(sorted(target.glob("*.ipynb")) if target.is_dir() else [target])
    return found


def execute_in_place(path):
    """Execute one notebook and overwrite it with its outputs."""
    nb = notebooks.clear_outputs(notebooks.read(path))
    notebooks.execute(nb, cwd=Path(path).parent)
    notebooks.write(nb, path)


def main(argv=None):
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="+", help="notebooks or folders of notebooks")
    for path in notebook_paths(parser.parse_args(argv).targets):
        execute_in_place(path)
        print(f"executed {path}")


if __name__ == "__main__":
    main()
