package node

import (
	"io/fs"
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
