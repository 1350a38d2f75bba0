// Command demochart turns the demo's benchmark results (the JSON printed by
// `terraform output -json chart_data`) into a bar chart image.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

const defaultTitle = "fio database profile (8k random, 70% reads, iodepth 16)"

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stderr); err != nil {
		_, _ = fmt.Fprintln(os.Stderr, "demochart:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stderr io.Writer) error {
	fs := flag.NewFlagSet("demochart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "output image file (required); PNG if it ends in .png, SVG otherwise")
	title := fs.String("title", defaultTitle, "chart title")
	fs.Usage = func() {
		_, _ = fmt.Fprintln(stderr, "usage: terraform output -json chart_data | demochart -o chart.svg [-title TEXT]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q; input is read from stdin", fs.Args())
	}
	if *out == "" {
		fs.Usage()
		return errors.New("-o is required")
	}

	targets, err := ParseChartData(stdin)
	if err != nil {
		return err
	}
	return writeChart(*out, targets, *title)
}

// writeChart renders into a temporary file beside out and renames it into
// place, so a failed run does not leave a half-written image.
func writeChart(out string, targets []Target, title string) error {
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := Render(tmp, targets, title, FormatFor(out)); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}
