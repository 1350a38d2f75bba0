package validate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestNodePath(t *testing.T) {
	tests := []struct {
		name, value string
		want        []string // in the summary and detail; none: valid
	}{
		{name: "plain", value: "/mnt/disks/vol1"},
		{name: "spaces, quotes, shell characters", value: `/mnt/my disk/it's "$HOME" ;|&*?`},
		{name: "non-ASCII letters and emoji", value: "/mnt/données/磁盘/💾"},
		{name: "zero-width joiner and soft hyphen (format characters, not controls)", value: "/mnt/👩\u200d💻/a\u00adb"},
		{name: "a real U+FFFD", value: "/mnt/\uFFFD"},
		{name: "relative and unclean (the types' own rules)", value: "mnt/../x//"},
		{name: "empty", value: ""},
		{name: "newline", value: "/mnt/disks/a\nb", want: []string{"Invalid character in path",
			`Attribute path: "/mnt/disks/a\nb" holds a control character (U+000A, a newline) at byte 12, after "/mnt/disks/a"; ` +
				`a path on a node or in a volume cannot hold control characters: remove it.`}},
		{name: "NUL", value: "/a\x00", want: []string{`(U+0000, NUL) at byte 2, after "/a"`}},
		{name: "tab", value: "/a\tb", want: []string{`(U+0009, a tab) at byte 2`}},
		{name: "carriage return", value: "/a\r", want: []string{`(U+000D, a carriage return)`}},
		{name: "escape", value: "/a\x1b[31m", want: []string{`(U+001B, an escape)`}},
		{name: "unnamed C0", value: "\x01/a", want: []string{`holds a control character (U+0001) at byte 0;`}},
		{name: "DEL", value: "/a\x7f", want: []string{`(U+007F, DEL)`}},
		{name: "C1 NEL", value: "/a\u0085", want: []string{`a control character (U+0085, a next line (NEL))`}},
		{name: "C1 CSI", value: "/a\u009b", want: []string{`a control character (U+009B)`}},
		{name: "line separator", value: "/a\u2028b", want: []string{`a Unicode line break (U+2028, a line separator)`, "cannot hold line breaks"}},
		{name: "paragraph separator", value: "/a\u2029", want: []string{`(U+2029, a paragraph separator)`}},
		{name: "right-to-left override", value: "/mnt/\u202evol1", want: []string{`a bidirectional text control (U+202E, a right-to-left override) at byte 5`}},
		{name: "isolate", value: "/mnt/\u2066x\u2069", want: []string{`(U+2066, a left-to-right isolate)`}},
		{name: "invalid UTF-8", value: "/mnt/\xffx", want: []string{`holds a byte that is not valid UTF-8 (0xFF) at byte 5, after "/mnt/"`, "must be valid UTF-8"}},
		{name: "truncated UTF-8", value: "/mnt/\xe2\x82", want: []string{`(0xE2) at byte 5`}},
		{name: "first of several", value: "/é\tx\ny", want: []string{`(U+0009, a tab) at byte 3, after "/é"`}},
		{name: "long prefix shortened", value: "/" + strings.Repeat("é", 40) + "\n", want: []string{`, after "...` + strings.Repeat("é", 16) + `"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &validator.StringResponse{}
			NodePath().ValidateString(context.Background(), validator.StringRequest{Path: path.Root("path"), ConfigValue: types.StringValue(tt.value)}, resp)
			if len(tt.want) == 0 {
				if resp.Diagnostics.HasError() {
					t.Fatalf("valid value refused: %v", resp.Diagnostics)
				}
				return
			}
			if resp.Diagnostics.ErrorsCount() != 1 {
				t.Fatalf("want one error, got %v", resp.Diagnostics)
			}
			d := resp.Diagnostics.Errors()[0]
			text := d.Summary() + "\n" + d.Detail()
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("diagnostic does not say %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestNodePath_nullUnknownAndNestedPath(t *testing.T) {
	for _, v := range []types.String{types.StringNull(), types.StringUnknown()} {
		resp := &validator.StringResponse{}
		NodePath().ValidateString(context.Background(), validator.StringRequest{Path: path.Root("path"), ConfigValue: v}, resp)
		if resp.Diagnostics.HasError() {
			t.Errorf("%v refused: %v", v, resp.Diagnostics)
		}
	}
	resp := &validator.StringResponse{}
	p := path.Root("targets").AtMapKey("disk").AtName("node_path")
	NodePath().ValidateString(context.Background(), validator.StringRequest{Path: p, ConfigValue: types.StringValue("/a\n")}, resp)
	if !resp.Diagnostics.HasError() || !strings.Contains(resp.Diagnostics.Errors()[0].Detail(), `Attribute targets["disk"].node_path: "/a\n"`) {
		t.Errorf("diagnostic does not name the nested attribute: %v", resp.Diagnostics)
	}
}

func TestNodePath_description(t *testing.T) {
	ctx := context.Background()
	v := NodePath()
	if v.Description(ctx) != v.MarkdownDescription(ctx) {
		t.Error("Description and MarkdownDescription differ")
	}
	for _, w := range []string{"NUL", "`U+007F`", "`U+0080`-`U+009F`", "`U+2028`", "`U+202A`-`U+202E`", "UTF-8"} {
		if !strings.Contains(v.Description(ctx), w) {
			t.Errorf("description does not mention %s: %s", w, v.Description(ctx))
		}
	}
}

// forbidden is NodePath's rule written out a second way, from the ranges its doc comment names.
func forbidden(r rune) bool {
	switch {
	case r <= 0x1F, r >= 0x7F && r <= 0x9F, r == 0x2028, r == 0x2029,
		r == 0x061C, r == 0x200E, r == 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// FuzzNodePath: CheckNodePath never panics, accepts every valid UTF-8 string without a forbidden
// character, and otherwise names the first offending character at its byte offset.
func FuzzNodePath(f *testing.F) {
	for _, s := range []string{"/mnt/disks/vol1", "/mnt/disks/a\nb", "/a\x00", "/\u202e", "/\xff", "/mnt/💾", "/\u2028", "\u0085", "/\uFFFD"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := CheckNodePath(s)
		want := -1
		for i, r := range s { // a range yields utf8.RuneError (size 1) for each invalid byte
			if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") || forbidden(r) {
				want = i
				break
			}
		}
		if want < 0 {
			if err != nil {
				t.Fatalf("CheckNodePath(%q) = %v, want nil", s, err)
			}
			return
		}
		var pe *PathCharError
		if !errors.As(err, &pe) {
			t.Fatalf("CheckNodePath(%q) = %v, want a *PathCharError at byte %d", s, err, want)
		}
		if pe.Offset != want || pe.Path != s {
			t.Fatalf("CheckNodePath(%q) = %+v, want offset %d", s, pe, want)
		}
		if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("at byte %d", want)) || !strings.Contains(msg, fmt.Sprintf("%q", s)) {
			t.Fatalf("message %q does not give the path and the offset %d", msg, want)
		}
		if CheckNodePath(s[:want]) != nil {
			t.Fatalf("CheckNodePath(%q) refuses the part before the first offending character", s[:want])
		}
	})
}
