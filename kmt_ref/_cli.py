"""The argument parser of every command line (the programs' and the workbook's)."""

import argparse
import re
import shutil
import textwrap

__all__ = ["ArgumentParser", "HelpFormatter", "ListHelpFormatter", "MAX_HELP_WIDTH"]

#: The widest a help line gets, however wide the terminal (longer lines are hard to read).
MAX_HELP_WIDTH = 100


def _plain(text):
    """``text`` with its RST literals (``name``, from docstrings) written as plain text."""
    return re.sub(r"``(.+?)``", r"\1", text)


class HelpFormatter(argparse.HelpFormatter):
    """Help as plain text, wrapped to the terminal and to at most :data:`MAX_HELP_WIDTH` columns."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        if width is None:
            width = min(shutil.get_terminal_size().columns - 2, MAX_HELP_WIDTH)
        super().__init__(prog, indent_increment, max_help_position, width)

    def _fill_text(self, text, width, indent):
        return super()._fill_text(_plain(text), width, indent)

    def _split_lines(self, text, width):
        return super()._split_lines(_plain(text), width)


class ListHelpFormatter(HelpFormatter):
    """:class:`HelpFormatter` for a description with a list, one entry an indented line (``  name  text``):
    each line is wrapped on its own, an entry's continuation lines under the start of its text."""

    def _fill_text(self, text, width, indent):
        lines = []
        for line in _plain(text).splitlines():
            entry = re.match(r"\s+\S+\s+(?=\S)", line)  # an indented line is an entry: "  name  text"
            hang = " " * (len(entry.group(0)) if entry else 0)
            lines.append(textwrap.fill(line, width, initial_indent=indent, subsequent_indent=indent + hang))
        return "\n".join(lines)


class ArgumentParser(argparse.ArgumentParser):
    """:class:`argparse.ArgumentParser` whose error is one line, ``prog: error: message (see prog --help)``,
    without the usage block above it, and exit status 2; its help is plain text (:class:`HelpFormatter`)
    and its sub-command parsers are of its class."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
