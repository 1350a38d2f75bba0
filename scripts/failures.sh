#!/usr/bin/env bash
# What failed in a test log, in a few lines: each failed test with the first lines of its error,
# each failed package and stage, and panics. .ci/run prints it last, so that a CI run's tail says
# what failed even when the test output scrolled far above it.
#
#   scripts/failures.sh LOG [MAX_LINES]
set -euo pipefail

log="$1"
max="${2:-60}"
[[ -f $log ]] || exit 0

printf '\n==> what failed (from %s; the whole output is above it)\n' "$log"
# Lines may carry a worker's "[cli] " prefix (scripts/acc.sh), and two workers' lines interleave:
# each prefix is followed on its own. After a test's "--- FAIL" line, go test prints its log
# indented; the first lines of it say what failed.
awk -v max="$max" '
	function out(line) { if (shown < max) print line; shown++ }
	{
		body = $0; who = ""
		if (match(body, /^\[[a-z0-9]+\] /)) { who = substr(body, 1, RLENGTH); body = substr(body, RLENGTH + 1) }
	}
	body ~ /^[ \t]*--- FAIL:/ { out($0); context[who] = 8; next }
	context[who] > 0 && body ~ /^[ \t]+[^ \t]/ && body !~ /^[ \t]*--- (PASS|SKIP)/ { out($0); context[who]--; next }
	{ context[who] = 0 }
	body ~ /^FAIL[ \t]/ || body ~ /^panic:/ || body ~ /^==> .*FAILED/ { out($0) }
	END { if (shown > max) printf "... and %d more lines\n", shown - max }
' "$log"
