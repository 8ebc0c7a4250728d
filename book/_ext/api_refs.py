"""A Sphinx extension of this book: docstring cross-references find their target.

The docstrings are written for a reader of the code, so they name objects as
the code does: ``:func:`kmt_ref.lloyd``` (the package's re-export of
``kmt_ref.classical.lloyd``) or a bare ``:func:`lloyd_transformer``` from
another module. Sphinx resolves neither, and the strict build (``-n -W``)
fails. This resolves, for the Python domain only, a re-exported name to the
object it names and a bare name to the one documented object of that name;
a name with no or several matches stays unresolved, so the build still fails
on it.
"""

import importlib


def _defining_name(target):
    """``kmt_ref.lloyd`` -> ``kmt_ref.classical.lloyd``: where the object is defined."""
    module_name, _, attribute = target.rpartition(".")
    if not module_name.startswith("kmt_ref"):
        return None
    try:
        obj = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError):
        return None
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if module is None or qualname is None or f"{module}.{qualname}" == target:
        return None
    return f"{module}.{qualname}"


def _resolve(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    target = node["reftarget"]
    defining = _defining_name(target)
    if defining is not None:
        return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], defining, node, contnode)
    matches = domain.find_obj(env, None, None, target.lstrip("~."), node["reftype"], 1)
    if len(matches) != 1:
        return None
    name, _ = matches[0]
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], name, node, contnode)


def setup(app):
    app.connect("missing-reference", _resolve)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
