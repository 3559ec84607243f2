"""The screen keeper: each terminal's visible screen, kept off the output path.

`ScreenKeeper` (sync core, keeper.py) takes raw bytes cheaply and parses them into a
history-less pyte screen under a CPU budget, fast-forwarding when behind; `ScreenTask`
(driver.py, trio) runs one keeper in the daemon. `ScreenSnapshot` is the screen as a value.
"""

from .keeper import ScreenKeeper
from .queries import DA1_REPLY, DA2_REPLY, DSR_REPLY, cpr_reply
from .snapshot import ScreenSnapshot

__all__ = [
    "DA1_REPLY",
    "DA2_REPLY",
    "DSR_REPLY",
    "ScreenKeeper",
    "ScreenSnapshot",
    "cpr_reply",
]
