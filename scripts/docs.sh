#!/usr/bin/env bash
# Regenerates the documentation's figures from their sources in docs/:
# docs/datapath.svg from docs/datapath.dot (Graphviz). With --check, changes
# nothing and fails when a committed figure differs from its source's
# output (the CTest docs_diagram); skips (exit 77) without Graphviz.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v dot >/dev/null; then
  echo "docs: skipped: no Graphviz 'dot' (apt install graphviz)"
  exit 77
fi
for source in docs/*.dot; do
  figure="${source%.dot}.svg"
  if [ "${1:-}" = "--check" ]; then
    if ! dot -Tsvg "$source" | cmp -s - "$figure"; then
      echo "docs: $figure is not what $source makes: run scripts/docs.sh and commit both" >&2
      exit 1
    fi
  else
    dot -Tsvg "$source" > "$figure"
  fi
done
echo "docs: every figure matches its source"
