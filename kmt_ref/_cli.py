"""The argument parser of every command line (the programs' and the workbook's)."""

import argparse

__all__ = ["ArgumentParser"]


class ArgumentParser(argparse.ArgumentParser):
    """:class:`argparse.ArgumentParser` whose error is one line, ``prog: error: message (see prog --help)``,
    without the usage block above it, and exit status 2; its sub-command parsers are of its class."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
