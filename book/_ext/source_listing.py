"""A Sphinx extension of this book: the source of a function or class, shown without its docstring.

The chapters show the code they explain. Its docstrings are written for the
API reference (numpydoc sections, cross-reference roles), where they are
rendered; in a listing they would show their markup. ``kmt-source`` shows an
object's source with each docstring cut to its first line, markup removed,
and links the object's entry in the API reference when it has one::

    ```{kmt-source} kmt_ref.attention.attend
    ```
"""

import ast
import importlib
import inspect
import re
import textwrap

from docutils import nodes
from sphinx import addnodes
from sphinx.util.docutils import SphinxDirective

#: ``:func:`name```, ``:func:`~a.b.name``` (shown as ``name``) or ``:meth:`text <target>```.
ROLE = re.compile(r":[\w:]+:`(~?)([^`<]*?)\s*(?:<[^`>]*>)?`")


def _role_text(match):
    tilde, text = match.groups()
    return text.rsplit(".", 1)[-1] if tilde else text


def summary(docstring):
    """The first line of a docstring, as plain text."""
    first = inspect.cleandoc(docstring).split("\n\n")[0].replace("\n", " ")
    return ROLE.sub(_role_text, first).replace("``", "")


def without_docstrings(source):
    """``source`` (a function or class) with every docstring cut to a one-line summary."""
    lines = source.split("\n")
    cuts = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and ast.get_docstring(node):
            first = node.body[0]
            indent = lines[first.lineno - 1][: first.col_offset]
            cuts.append((first.lineno - 1, first.end_lineno, f'{indent}"""{summary(ast.get_docstring(node))}"""'))
    for start, end, line in sorted(cuts, reverse=True):
        lines[start:end] = [line]
    return "\n".join(lines)


class SourceListing(SphinxDirective):
    required_arguments = 1

    def run(self):
        name = self.arguments[0]
        module_name, _, attribute = name.rpartition(".")
        obj = getattr(importlib.import_module(module_name), attribute)
        self.env.note_dependency(inspect.getsourcefile(obj))
        code = without_docstrings(textwrap.dedent(inspect.getsource(obj))).rstrip()
        listing = nodes.literal_block(code, code, language="python")
        if attribute.startswith("_"):  # a private kernel: no entry of its own
            return [listing]
        link = addnodes.pending_xref("", refdomain="py", reftype="obj", reftarget=name, refexplicit=False,
                                     refdoc=self.env.docname)
        link += nodes.literal(name, name)
        note = nodes.paragraph("", "Documented in the API reference: ")
        note += link
        return [listing, note]


def setup(app):
    app.add_directive("kmt-source", SourceListing)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
