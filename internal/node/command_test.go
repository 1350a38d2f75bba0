package node

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/testenv"
)

// quoteSeeds are strings that break naive quoting; they seed the fuzz tests and the SSH round trip.
var quoteSeeds = []string{
	"", " ", "plain", "two words", "'", "''", `"`, `\`, `\'`, `'\''`, "$HOME", "${HOME}", "$(id)",
	"`id`", "a;b", "a&&b", "a|b", "a>b", "<a", "*", "?", "[a]", "{a,b}", "~", "~root", "#x", "a#b",
	"!", "!!", "a=b", "-n", "--", "-e", "\n", "a\nb", "\t", "\r\n", "%s", "%%", "\\n", "é", "日本",
	"\xff\xfe", "\x01\x1f\x7f", "trailing\\", "'leading", "a'b'c", "$'x'", "{}", "(a)", "a b\tc\nd",
}

func TestQuote(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", "''"},
		{"abc", "abc"},
		{"/var/lib/rancher/k3s", "/var/lib/rancher/k3s"},
		{"user@host:22,a+b%c", "user@host:22,a+b%c"},
		{"-rf", "-rf"},
		{"a b", "'a b'"},
		{"a=b", "'a=b'"},
		{"~", "'~'"},
		{"it's", `'it'\''s'`},
		{"'", `''\'''`},
		{"$(rm -rf /)", "'$(rm -rf /)'"},
		{"a\nb", "'a\nb'"},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCommandRender(t *testing.T) {
	got, err := NewCommand("mkdir", "-p", "--", "/data/my vol").Render()
	if err != nil {
		t.Fatal(err)
	}
	if want := "mkdir -p -- '/data/my vol'"; got != want {
		t.Errorf("Render = %q, want %q", got, want)
	}

	got, err = Script(`printf '%s\n' "$1"`, "x y").Render()
	if err != nil {
		t.Fatal(err)
	}
	if want := `sh -c 'printf '\''%s\n'\'' "$1"' sh 'x y'`; got != want {
		t.Errorf("Script Render = %q, want %q", got, want)
	}

	if _, err := (Command{}).Render(); err == nil {
		t.Error("empty command rendered without error")
	}
	_, err = NewCommand("echo", "a\x00b").Render()
	if !errors.Is(err, ErrNUL) {
		t.Errorf("NUL argument: got error %v, want ErrNUL", err)
	}
	if err != nil && !strings.Contains(err.Error(), `echo 'a\x00b'`) {
		t.Errorf("NUL error does not show the command readably: %v", err)
	}
}

func TestCommandSecretAndCopies(t *testing.T) {
	base := NewCommand("chpasswd")
	withSecret := base.Arg("--user", "bob").Secret("hunter2")
	if got, want := Script("set -e\nstat -- \"$1\"\necho done\n", "/x").String(), "sh -c 'set -e … (a script of 3 lines)' sh /x"; got != want {
		t.Errorf("a script shows as %q, want %q", got, want)
	}
	if got, want := withSecret.String(), "chpasswd --user bob <redacted>"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	line, err := withSecret.Render()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, "hunter2") {
		t.Errorf("Render must pass the secret on: %q", line)
	}
	// Arg and Secret return copies: base is unchanged, and siblings do not share storage.
	a := base.Arg("a")
	b := base.Arg("b")
	if base.String() != "chpasswd" || a.String() != "chpasswd a" || b.String() != "chpasswd b" {
		t.Errorf("commands share storage: base %q, a %q, b %q", base, a, b)
	}
	sudo := withSecret.prefix("sudo", "-n", "--")
	if got, want := sudo.String(), "sudo -n -- chpasswd --user bob <redacted>"; got != want {
		t.Errorf("prefixed String = %q, want %q", got, want)
	}
	argv := sudo.Argv()
	argv[0] = "changed"
	if sudo.Argv()[0] != "sudo" {
		t.Error("Argv exposes the command's storage")
	}
}

// shells are the local shells the round trip runs through: POSIX sh (dash on Debian) and bash,
// which is the login shell sshd uses for root.
func shells(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, sh := range []string{"/bin/sh", "bash"} {
		if path, err := exec.LookPath(sh); err == nil {
			out = append(out, path)
		}
	}
	if len(out) == 0 {
		testenv.Missing(t, "no shell found")
	}
	return out
}

// FuzzQuote checks that any string survives Quote through real shells byte for byte, and that
// strings with NUL are rejected.
func FuzzQuote(f *testing.F) {
	for _, s := range quoteSeeds {
		f.Add(s)
	}
	f.Add("a\x00b")
	f.Fuzz(func(t *testing.T, s string) {
		cmd := NewCommand("printf", "%s", s)
		line, err := cmd.Render()
		if strings.IndexByte(s, 0) >= 0 {
			if !errors.Is(err, ErrNUL) {
				t.Fatalf("Render(%q) = %q, %v; want ErrNUL", s, line, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Render(%q): %v", s, err)
		}
		for _, sh := range shells(t) {
			out, err := exec.Command(sh, "-c", line).Output()
			if err != nil {
				t.Fatalf("%s -c %q: %v", sh, line, err)
			}
			if string(out) != s {
				t.Fatalf("%s read Quote(%q) = %q back as %q", sh, s, Quote(s), out)
			}
		}
	})
}

// FuzzCommandArgs checks that several arguments stay separate and intact.
func FuzzCommandArgs(f *testing.F) {
	for i := range quoteSeeds {
		f.Add(quoteSeeds[i], quoteSeeds[len(quoteSeeds)-1-i])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if strings.IndexByte(a, 0) >= 0 || strings.IndexByte(b, 0) >= 0 {
			return
		}
		line, err := NewCommand("printf", `%s\0`, a, b).Render()
		if err != nil {
			t.Fatal(err)
		}
		for _, sh := range shells(t) {
			out, err := exec.Command(sh, "-c", line).Output()
			if err != nil {
				t.Fatalf("%s -c %q: %v", sh, line, err)
			}
			want := []byte(a + "\x00" + b + "\x00")
			if !bytes.Equal(out, want) {
				t.Fatalf("%s: args %q %q came back as %q", sh, a, b, out)
			}
		}
	})
}
