"""The command lines. Each parses its arguments into a dataclass and calls the library:

    python -m transformer_lab.cli.train --help       (or: transformer-lab-train)
    python -m transformer_lab.cli.translate --help   (or: transformer-lab-translate)
"""
