# gate.py, as in seed 003 (for the benchmark only): reads the newest
# receipt, sorting every receipt file name on each call.
import json, os, sys
from pathlib import Path

RECEIPT_DIR = Path(os.environ.get("RECEIPT_DIR", "/tmp/agent-receipts"))
SAFE = {("git", "status"), ("git", "diff"), ("ls",)}

def newest():
    files = sorted(RECEIPT_DIR.glob("*.jsonl"))
    if not files:
        return None
    return json.loads(files[-1].read_text())

def argv_key(argv):
    return tuple(argv[:2]) if len(argv) >= 2 else tuple(argv)

rec = newest()
if rec is None or rec["exit"] == 0 or argv_key(rec["argv"]) in SAFE:
    sys.exit(0)
print(
    f"blocked: receipt {rec['id']} exited {rec['exit']} "
    f"argv={rec['argv']!r}. Cite this id and fix the command; do not wrap true."
)
sys.exit(2)
