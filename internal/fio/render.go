package fio

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// FilePrefix begins the name of every file fio creates for a rendered spec.
const FilePrefix = "clusterstorage-fio."

// PercentileList is the percentile_list every rendered spec asks fio for.
const PercentileList = "50:95:99:99.9"

// renderVersion is hashed with the rendering, so a change in what a spec
// renders to also changes its hash (and cached results are not reused).
const renderVersion = "clusterstorage-fio/v2"

// option is one fio option; an empty value renders as a bare flag.
type option struct{ key, value string }

// section is one fio job section.
type section struct {
	name string
	opts []option
}

// globalOptions are the fixed options of every rendered spec, after the
// directory and the file names. thread runs every job as a thread of the one
// fio process: fio forks job processes into sessions of their own (setsid),
// which a stop of fio's process group would not reach, so a cancelled run
// could keep doing I/O until its runtime ended.
var globalOptions = []option{
	{"thread", ""},
	{"group_reporting", ""},
	{"time_based", ""},
	{"percentile_list", PercentileList},
	{"lat_percentiles", "1"},
	{"unlink", "1"},
}

// sections renders the jobs of s, in order, with their options in a fixed
// order.
func sections(s Spec) []section {
	out := make([]section, 0, len(s.Jobs))
	for i, j := range s.Jobs {
		var o []option
		if i > 0 {
			o = append(o, option{"stonewall", ""})
		}
		o = append(o, option{"rw", j.RW})
		if mixed(j.RW) {
			o = append(o, option{"rwmixread", strconv.Itoa(j.RWMixRead)})
		}
		o = append(o,
			option{"bs", canonicalSize(j.BlockSize)},
			option{"size", canonicalSize(j.Size)},
			option{"numjobs", strconv.Itoa(j.NumJobs)},
			option{"ioengine", j.IOEngine},
			option{"iodepth", strconv.Itoa(j.IODepth)},
			option{"direct", boolInt(j.Direct)},
			option{"runtime", seconds(j.Runtime.Seconds())},
		)
		if j.RampTime > 0 {
			o = append(o, option{"ramp_time", seconds(j.RampTime.Seconds())})
		}
		if j.Fsync > 0 {
			o = append(o, option{"fdatasync", strconv.Itoa(j.Fsync)})
		}
		out = append(out, section{name: j.Name, opts: o})
	}
	return out
}

func canonicalSize(s string) string {
	n, err := ParseSize(s)
	if err != nil {
		return s
	}
	return FormatSize(n)
}

func boolInt(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func seconds(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) + "s" }

// fileOptions are the options that place the files: the directory and the
// filename_format that makes their names predictable.
func fileOptions(s Spec, dir string) []option {
	return []option{
		{"directory", dir},
		{"filename_format", FilePrefix + fileTag(s) + ".$jobname.$jobnum"},
	}
}

func fileTag(s Spec) string { return Hash(s)[:16] }

// writeJobFile writes global options and sections in fio's job file syntax.
func writeJobFile(b *strings.Builder, global []option, secs []section) {
	writeSection := func(name string, opts []option) {
		fmt.Fprintf(b, "[%s]\n", name)
		for _, o := range opts {
			if o.value == "" {
				b.WriteString(o.key + "\n")
			} else {
				fmt.Fprintf(b, "%s=%s\n", o.key, o.value)
			}
		}
	}
	writeSection("global", global)
	for _, s := range secs {
		b.WriteString("\n")
		writeSection(s.name, s.opts)
	}
}

// Hash returns the hex SHA-256 of the spec's canonical rendering: every job
// option in a fixed order, sizes in canonical form, without the directory.
// Specs that run the same workload have the same hash, whatever spelling of
// sizes they used, so it can key a result cache. It does not validate s.
func Hash(s Spec) string {
	var b strings.Builder
	b.WriteString("# " + renderVersion + "\n")
	writeJobFile(&b, globalOptions, sections(s))
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

func check(s Spec, dir string) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("invalid fio spec: %w", err)
	}
	if err := ValidDirectory(dir); err != nil {
		return fmt.Errorf("invalid fio directory %q: %w", dir, err)
	}
	return nil
}

// Args returns fio's command-line arguments (without "fio" itself) that run s
// in the directory dir and print JSON, or an error when s or dir is invalid.
// The output is deterministic. Every element is one argument: a caller going
// through a shell must quote each one (filename_format contains '$').
func Args(s Spec, dir string) ([]string, error) {
	if err := check(s, dir); err != nil {
		return nil, err
	}
	args := []string{"--output-format=json", "--eta=never"}
	flag := func(o option) string {
		if o.value == "" {
			return "--" + o.key
		}
		return "--" + o.key + "=" + o.value
	}
	for _, o := range append(fileOptions(s, dir), globalOptions...) {
		args = append(args, flag(o))
	}
	for _, sec := range sections(s) {
		args = append(args, "--name="+sec.name)
		for _, o := range sec.opts {
			args = append(args, flag(o))
		}
	}
	return args, nil
}

// JobFile returns a fio job file that runs s in the directory dir, or an error
// when s or dir is invalid. The output is deterministic. Run it with
// [JobFileArgs], since the output format is not a job file option.
func JobFile(s Spec, dir string) (string, error) {
	if err := check(s, dir); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("; Generated by terraform-provider-clusterstorage (" + renderVersion + ", " + Hash(s) + ").\n")
	b.WriteString("; Run with: fio --output-format=json --eta=never <this file>\n")
	writeJobFile(&b, append(fileOptions(s, dir), globalOptions...), sections(s))
	return b.String(), nil
}

// JobFileArgs returns fio's command-line arguments that run the job file at
// jobFilePath and print JSON.
func JobFileArgs(jobFilePath string) []string {
	return []string{"--output-format=json", "--eta=never", jobFilePath}
}

// Files returns the paths of the files fio creates when it runs s in dir, in
// job order then clone order: dir/clusterstorage-fio.<hash>.<job>.<clone>,
// one per clone of every job. Paths use '/' whatever the local OS, since fio
// runs on Linux.
func Files(s Spec, dir string) []string {
	var files []string
	tag := fileTag(s)
	for _, j := range s.Jobs {
		for c := 0; c < j.NumJobs; c++ {
			files = append(files, path.Join(dir, fmt.Sprintf("%s%s.%s.%d", FilePrefix, tag, j.Name, c)))
		}
	}
	return files
}

// SpaceBytes returns the disk space the files of s need: size times num_jobs,
// added up over jobs, since fio lays out every job's files before the first
// job starts (and, with unlink=1, removes each job's files when that job
// ends). Sizes that do not parse count as 0.
func SpaceBytes(s Spec) int64 {
	var total int64
	for _, j := range s.Jobs {
		total = satAdd(total, j.fileBytes())
	}
	return total
}
