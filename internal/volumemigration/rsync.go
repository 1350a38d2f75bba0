package volumemigration

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

// copyScript runs in the copy pod (scripts/copy.sh).
//
//go:embed scripts/copy.sh
var copyScript string

// Modes of copyScript.
const (
	modeCopy  = "copy"
	modeFinal = "final"
)

// copyOutput is what one run of copyScript reported.
type copyOutput struct {
	// Files and Bytes are the regular files rsync transferred and their size, summed over the
	// run's passes.
	Files, Bytes int64
	// Differs lists what the last verification found different (itemized changes), empty when
	// the copy matches the source file for file, byte for byte.
	Differs []string
	// Verified is set when a verification ran.
	Verified bool
	// CopySeconds, VerifySeconds and RecordSeconds are what the rsync passes, the
	// verifications and the record of the files compared while the workload ran took in the pod
	// (0 when its date cannot tell fractions of a second).
	CopySeconds, VerifySeconds, RecordSeconds float64
	// Unchanged is how many files the last verification found unchanged since the record, and
	// so did not read (-1: it read every file).
	Unchanged int64
	// XattrFiles is how many files have extended attributes or ACLs the copy left out (without
	// copy_xattrs; -1: not known).
	XattrFiles int64
	// Exit is the script's exit status; Ended is false when its last line never came.
	Exit  int
	Ended bool
}

// parseCopyOutput reads copyScript's log. Lines of rsync's --stats output count only inside a
// "stats" section; every other line is kept in Log order but ignored (rsync's warnings).
func parseCopyOutput(log, marker string) (copyOutput, error) {
	out := copyOutput{Unchanged: -1, XattrFiles: -1}
	section := ""
	prefix := marker + " "
	for _, line := range strings.Split(log, "\n") {
		line = strings.TrimRight(line, "\r")
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			switch {
			case rest == "stats":
				section = "stats"
			case rest == "verify":
				section = "verify"
				out.Verified = true
				out.Differs = nil
				out.Unchanged = -1
			case rest == "record":
				section = "record"
			case strings.HasPrefix(rest, "xattrs "):
				if n, err := strconv.ParseInt(strings.TrimPrefix(rest, "xattrs "), 10, 64); err == nil {
					out.XattrFiles = n
				}
			case strings.HasPrefix(rest, "unchanged "):
				if n, err := strconv.ParseInt(strings.TrimPrefix(rest, "unchanged "), 10, 64); err == nil {
					out.Unchanged = n
				}
			case strings.HasPrefix(rest, "took "):
				if ms, err := strconv.ParseInt(strings.TrimPrefix(rest, "took "), 10, 64); err == nil {
					switch section {
					case "verify":
						out.VerifySeconds += float64(ms) / 1000
					case "record":
						out.RecordSeconds += float64(ms) / 1000
					default:
						out.CopySeconds += float64(ms) / 1000
					}
				}
			case strings.HasPrefix(rest, "differs "):
				out.Differs = append(out.Differs, strings.TrimPrefix(rest, "differs "))
			case strings.HasPrefix(rest, "exit "):
				n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(rest, "exit ")))
				if err != nil {
					return out, fmt.Errorf("the copy script's last line is not an exit status: %q", line)
				}
				out.Exit, out.Ended = n, true
			}
			continue
		}
		if section != "stats" {
			continue
		}
		if v, ok := statValue(line, "Number of regular files transferred:"); ok {
			out.Files += v
		} else if v, ok := statValue(line, "Total transferred file size:"); ok {
			out.Bytes += v
		}
	}
	return out, nil
}

// statValue reads the number after label in one line of rsync's --stats output ("Total
// transferred file size: 3,895 bytes"); rsync groups digits with "," (or "." in some locales).
func statValue(line, label string) (int64, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), label)
	if !ok {
		return 0, false
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return 0, false
	}
	digits := strings.NewReplacer(",", "", ".", "", "'", "").Replace(fields[0])
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}
