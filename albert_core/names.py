"""The model families' names, in the order every selector lists them: the bottom of the import graph.

config.py (a config's family must be one of these) and families/ (one module per name) both read it,
so neither imports the other for it.
"""

from __future__ import annotations

FAMILIES: tuple[str, ...] = ("bert", "albert", "roberta", "distilbert", "electra", "deberta-v2", "modernbert",
                              "mpnet")
