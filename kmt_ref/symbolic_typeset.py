"""A statement's ASCII mathematics typeset as inline LaTeX for a book page (the terminal prints the ASCII)."""

import re

__all__ = ["typeset"]


#: Whole formulas of the statements, written as a reader would typeset them (applied first).
_FORMULAS = (
    (r"\(s \+ 1\)\(z_\(s\+1\) - h\(s\+1\)\)", r"$(s + 1)(z_{s+1} - h(s+1))$"),
    (r"tau = m - sqrt\(\(1 - V\)/s\)", r"$\\tau = m - \\sqrt{(1 - V)/s}$"),
    (r"r_j / \(1 \+ r_j\)", r"$r_j / (1 + r_j)$"),
    (r"z_(\d+) - tau", r"$z_\1 - \\tau$"),
    (r"\|\|([^|]+)\|\|\^2", lambda m: "$\\lVert " + _subscripts(m.group(1)) + "\\rVert^2$"),
    (r"\[([^\]$]*\|[^\]$]*)\]", lambda m: "$[" + _subscripts(m.group(1)).replace(" | ", " \\mid ") + "]$"),
    (r"\bc~", r"$\\tilde c$"),
    (r"\bl1 distance", r"$\\ell_1$ distance"),
)
#: Single symbols, typeset where they stand alone (not inside a formula already typeset).
_GREEK = {"gamma": "\\gamma", "beta": "\\beta", "tau": "\\tau", "delta": "\\delta", "Delta": "\\Delta",
          "eps": "\\varepsilon", "eta": "\\eta", "mu": "\\mu"}


def _subscripts(text):
    """``s_12`` -> ``s_{12}``, ``Y_t+1`` -> ``Y_{t+1}`` inside a formula."""
    return re.sub(r"\b([A-Za-z])_(\w+(?:\+1)?)", lambda m: f"{m.group(1)}_{{{m.group(2)}}}", text)


def typeset(text):
    """A statement's ASCII mathematics (``s_12``, ``||x_1 - c_2||^2``, ``gamma > 0``, ``[c | e_1]``) as inline
    LaTeX for a book page; the words stay words. The terminal (``verify``) prints the ASCII."""
    parts = [text]
    for pattern, repl in _FORMULAS:
        parts = [p if p.startswith("$") else re.sub(pattern, repl, p) for p in parts]
        parts = [q for p in parts for q in (re.split(r"(\$[^$]*\$)", p) if not p.startswith("$") else [p]) if q]
    greek = "|".join(_GREEK)
    symbol = (rf"-?\b(?:(?:{greek})(?:_\w+)?|[A-Za-z]_\w+(?:\+1)?|[a-z]\^2|[A-Za-z] = -?[0-9.e+-]+)"
              rf"(?: ?[<>=] ?-?[0-9.e+-]+\b)?")

    def one(m):
        tex = m.group(0)
        for word, command in _GREEK.items():
            tex = re.sub(rf"\b{word}(?![A-Za-z])", lambda _, c=command: c, tex)
        return "$" + _subscripts(tex) + "$"

    return "".join(p if p.startswith("$") else re.sub(symbol, one, p) for p in parts)
