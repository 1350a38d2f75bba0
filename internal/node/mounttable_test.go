package node

import "testing"

func TestUnescapeMount(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/mnt/data", "/mnt/data"},
		{`/mnt/my\040disk`, "/mnt/my disk"},
		{`/mnt/a\011b\012c`, "/mnt/a\tb\nc"},
		{`/mnt/back\134slash`, `/mnt/back\slash`},
		{`/mnt/end\04`, `/mnt/end\04`},             // too short to be an escape
		{`/mnt/not\999octal`, `/mnt/not\999octal`}, // not octal
		{`/mnt/big\777`, `/mnt/big\777`},           // beyond a byte
		{`\040`, " "},
		{`\`, `\`},
	} {
		if got := UnescapeMount(c.in); got != c.want {
			t.Errorf("UnescapeMount(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestEscapeMountRoundTrip(t *testing.T) {
	for _, p := range []string{"/mnt/data", "/mnt/my disk", "/mnt/a\tb\nc", `/mnt/back\slash`, `/mnt/\040 literal`} {
		e := EscapeMount(p)
		for _, r := range e {
			if r == ' ' || r == '\t' || r == '\n' {
				t.Errorf("EscapeMount(%q) = %q still holds a field separator", p, e)
			}
		}
		if got := UnescapeMount(e); got != p {
			t.Errorf("UnescapeMount(EscapeMount(%q)) = %q", p, got)
		}
	}
}
