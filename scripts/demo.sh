#!/usr/bin/env bash
# make demo: run the bundled agent-style script under tracecell and show what
# happened: its own output, tracecell's one-line notices, and the JSON report.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-bin/tracecell}
py=${2:-/usr/bin/python3}
sbx=$(mktemp -d "${TMPDIR:-/tmp}/tracecell-demo-XXXXXX")
report="$sbx.report.json"

echo "== tracecell demo"
echo "   sandbox: $sbx (the only place the script may write)"
echo "   command: $bin run --write $sbx --report $report -- $py examples/demo/agent_task.py"
echo
set +e
"$bin" run --write "$sbx" --report "$report" --timeout 120s -- "$py" "$PWD/examples/demo/agent_task.py"
status=$?
set -e
echo
echo "== exit status: $status"
echo "== files the script left in the sandbox:"
(cd "$sbx" && find . -path ./.tmp -prune -o -type f -print | sort | sed 's/^/   /')
echo
echo "== report summary ($report):"
"$py" examples/demo/show_report.py "$report"
echo
echo "== the raw JSON report starts like this:"
head -c 1500 "$report"; echo " ..."
