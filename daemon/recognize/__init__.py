"""Turn recognizers: what state is a terminal in — awaiting input, awaiting approval, busy,
exited or unknown — decided by data-driven TOML manifests (DESIGN.md, "Recognizers").

Pure and synchronous: the input is a plain screen model (`RecognitionInput`), built by the
screen keeper from its pyte screen; nothing here does I/O except `Registry`'s reading of
manifest files.

    registry = Registry()                       # built-ins + $XDG_CONFIG_HOME/vigil/recognizers
    registry.reload_if_changed()                # cheap; before evaluations or on a timer
    det = registry.detect("auto", RecognitionInput(lines=..., cursor=..., foreground="claude"))
    reported = debouncer.observe(det.state, trio.current_time())
"""

from ._debounce import IdleDebouncer
from ._engine import NO_RULE_MATCHED, PROCESS_EXITED, evaluate
from ._manifest import Manifest, ManifestError, Rule, parse_manifest
from ._marker import marker_resembles
from ._model import IDLE_STATES, STATES, Detection, RecognitionInput, State
from ._regions import is_horizontal_rule
from ._registry import AUTO, BUILTIN_ORDER, FALLBACK, FALLBACKS, Registry, UnknownRecognizer, load_builtins, user_manifest_dir

__all__ = [
    "AUTO",
    "BUILTIN_ORDER",
    "FALLBACK",
    "IDLE_STATES",
    "NO_RULE_MATCHED",
    "PROCESS_EXITED",
    "STATES",
    "Detection",
    "IdleDebouncer",
    "Manifest",
    "ManifestError",
    "RecognitionInput",
    "Registry",
    "Rule",
    "State",
    "UnknownRecognizer",
    "evaluate",
    "is_horizontal_rule",
    "load_builtins",
    "marker_resembles",
    "parse_manifest",
    "user_manifest_dir",
]
