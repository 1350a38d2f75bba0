package node

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    FileInfo
		wantErr bool
	}{
		{name: "missing", out: "missing\n", want: FileInfo{Path: "/p"}},
		{name: "empty dir", out: "41ed 0 0 4096\nempty\n",
			want: FileInfo{Path: "/p", Exists: true, Mode: fs.ModeDir | 0o755, Size: 4096, Empty: true}},
		{name: "setgid dir with entries", out: "45e8 1000 1001 4096\nnotempty\n",
			want: FileInfo{Path: "/p", Exists: true, Mode: fs.ModeDir | fs.ModeSetgid | 0o750, UID: 1000, GID: 1001, Size: 4096}},
		{name: "regular file", out: "81a4 0 0 12\n",
			want: FileInfo{Path: "/p", Exists: true, Mode: 0o644, Size: 12}},
		{name: "symlink", out: "a1ff 0 0 4\n",
			want: FileInfo{Path: "/p", Exists: true, Mode: fs.ModeSymlink | 0o777, Size: 4}},
		{name: "sticky dir", out: "43ff 0 0 4096\nnotempty\n",
			want: FileInfo{Path: "/p", Exists: true, Mode: fs.ModeDir | fs.ModeSticky | 0o777, Size: 4096}},
		{name: "garbage", out: "what\n", wantErr: true},
		{name: "bad mode", out: "zz 0 0 1\n", wantErr: true},
		{name: "dir without emptiness", out: "41ed 0 0 4096\n", wantErr: true},
		{name: "stat failed", out: "error stat: cannot statx '/p': Permission denied\n", wantErr: true},
		{name: "emptiness check failed", out: "41ed 0 0 4096\nerror find: '/p': Permission denied\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat("/p", []byte(tt.out))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("want an error, got %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestChmodArg(t *testing.T) {
	for mode, want := range map[fs.FileMode]string{
		0o755:                        "00755",
		0o700:                        "00700",
		fs.ModeSetgid | 0o2770&0o777: "02770",
		fs.ModeSticky | 0o777:        "01777",
		fs.ModeSetuid | 0o755:        "04755",
		fs.ModeDir | 0o755:           "00755",
	} {
		if got := chmodArg(mode); got != want {
			t.Errorf("chmodArg(%s) = %q, want %q", mode, got, want)
		}
	}
}

// statScript describes paths that all exist with one stat and one find, and a batch with a
// missing path one path at a time; both give the same records, here with the node's real sh,
// stat and find.
func TestStatScript_allExistingInOneCall(t *testing.T) {
	root := t.TempDir()
	paths := []string{
		filepath.Join(root, "empty dir"),
		filepath.Join(root, "dir with a dotfile"),
		filepath.Join(root, "file 'q'"),
		filepath.Join(root, "link to a dir"),
		filepath.Join(root, "dangling link"),
		filepath.Join(root, "new\nline"),
	}
	for _, err := range []error{
		os.Mkdir(paths[0], 0o755),
		os.Mkdir(paths[1], 0o700),
		os.WriteFile(filepath.Join(paths[1], ".keep"), nil, 0o600),
		os.WriteFile(paths[2], []byte("12345"), 0o640),
		os.Symlink(paths[1], paths[3]),
		os.Symlink(filepath.Join(root, "nowhere"), paths[4]),
		os.Mkdir(paths[5], 0o755),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// stat and find through wrappers that count their runs.
	bin, calls := t.TempDir(), filepath.Join(t.TempDir(), "calls")
	for _, name := range []string{"stat", "find"} {
		real, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		wrapper := fmt.Sprintf("#!/bin/sh\necho %s >>%s\nexec %s \"$@\"\n", name, calls, real)
		if err := os.WriteFile(filepath.Join(bin, name), []byte(wrapper), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := func(paths ...string) ([]string, []string) {
		t.Helper()
		if err := os.Remove(calls); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", append([]string{"-c", statScript, "sh"}, paths...)...)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("statScript: %v\n%s", err, out)
		}
		records := strings.Split(string(out), "\x00")
		if len(records) != len(paths)+1 || records[len(paths)] != "" {
			t.Fatalf("statScript printed %q for %d paths", out, len(paths))
		}
		ran, _ := os.ReadFile(calls)
		return records[:len(paths)], strings.Fields(string(ran))
	}

	fast, ran := run(paths...)
	if want := []string{"stat", "find"}; !slices.Equal(ran, want) {
		t.Errorf("for paths that all exist it ran %v, want %v", ran, want)
	}
	slow, ran := run(append(slices.Clone(paths), filepath.Join(root, "missing"))...)
	if len(ran) <= 2 {
		t.Errorf("with a missing path it ran %v, want stat (and find for the directories) per path", ran)
	}
	if slow[len(paths)] != "missing\n" {
		t.Errorf("missing path: %q", slow[len(paths)])
	}
	wantEmpty := []bool{true, false, false, false, false, true}
	for i, p := range paths {
		if fast[i] != slow[i] {
			t.Errorf("%q: one call %q, one per path %q", p, fast[i], slow[i])
		}
		fi, err := parseStat(p, []byte(fast[i]))
		if err != nil || !fi.Exists || fi.Empty != wantEmpty[i] {
			t.Errorf("%q: %+v, %v; want it to exist, empty %v", p, fi, err, wantEmpty[i])
		}
	}
}
