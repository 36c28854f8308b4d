"""How many copies of a layer's sublayers are stored: the one layout rule that counts, replays and builds share.

Below families/ and bert_replay.py in the import graph (it reads only a config's fields).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config_fields import ConfigFields


def stored_copies(cfg: ConfigFields, sublayer: str) -> int:
    """Copies of the attention or FFN sublayer that are stored.

    HF ALBERT applies num_layers steps of a group of inner_group_num layers: L·inner layer
    applications. A shared sublayer is stored once per (group, inner slot); an unshared one
    once per application. ALBERT paper Sec. 3.1, "cross-layer parameter sharing".
    """
    shared = cfg.sharing == "all" or cfg.sharing == sublayer
    return (cfg.num_groups if shared else cfg.num_layers) * cfg.inner_group_num
