"""Reading the logs the testbed's processes leave (scripts/testbed.sh,
scripts/ns3_testbed.sh): each prints its result or counters as a JSON line."""
import json


def last_json(path):
    """The last line of `path` that parses as JSON, or None (no file, or
    the process died before it printed one)."""
    try:
        lines = [l for l in open(path) if l.startswith("{")]
    except OSError:
        return None
    for line in reversed(lines):
        try:
            return json.loads(line)
        except ValueError:
            pass
    return None
