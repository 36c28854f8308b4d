"""Serving sizes: the bytes of the weights at rest in float32, bfloat16/float16, and int8/int4 weight-only as torchao stores them."""

from __future__ import annotations

import logging

# torchao's import on a CPU-only machine: it tries its CUDA extension libraries and logs each failure
# (torchao/__init__.py, logger "torchao"), and registering its Enum constants makes torch.utils._pytree warn.
_QUIET = (("torchao", "Failed to load"), ("torchao", "Skipping import of cpp extensions"),
          ("torch.utils._pytree", "is an Enum subclass and is now natively supported"))


class _DropMessages(logging.Filter):
    def __init__(self, starts: tuple[str, ...]) -> None:
        super().__init__()
        self.parts = starts

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        return not any(p in msg for p in self.parts)


def quiet_torchao() -> None:
    """Keep torchao's library-loading messages (harmless without CUDA) out of the log; call before importing
    torchao or peft (which imports it). Only those messages are dropped; the loggers stay as they are."""
    for name in {n for n, _ in _QUIET}:
        log = logging.getLogger(name)
        if not any(isinstance(f, _DropMessages) for f in log.filters):
            log.addFilter(_DropMessages(tuple(m for n, m in _QUIET if n == name)))
