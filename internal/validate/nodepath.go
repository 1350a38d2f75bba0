package validate

import (
	"context"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

// NodePath checks the characters of a path on a node or in a volume (a local volume's
// directory, a directory a benchmark or a capacity probe works in, a k3s data directory, a
// backend's data path), in every type, so a newline never reaches a node, a script or a
// PersistentVolume. It refuses, at plan:
//
//   - control characters: C0 (U+0000 to U+001F, NUL, tab and newline included), DEL (U+007F)
//     and C1 (U+0080 to U+009F), which Linux would store but which break every line-oriented tool
//     (logs, `ls`, the node scripts, mount tables) and hide what the path is;
//   - the Unicode line and paragraph separators (U+2028, U+2029), newlines to many tools;
//   - bidirectional text controls (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069),
//     which make a plan show a path other than the one used;
//   - bytes that are not valid UTF-8.
//
// Every other character is left alone: spaces, quotes, `$`, non-ASCII letters and emoji are
// legal in a path and each type quotes its paths for the shell. Whether the path is absolute,
// clean or outside system directories is each type's own rule, checked by its own validator
// after this one (such a validator skips values CheckNodePath refuses, so one problem gives one
// error).
func NodePath() validator.String { return nodePath{} }

// nodePathDescription is the validator's Description and MarkdownDescription.
const nodePathDescription = "a path with no control characters (C0 `U+0000`-`U+001F` with NUL, tab and newline; DEL `U+007F`; " +
	"C1 `U+0080`-`U+009F`), no Unicode line or paragraph separators (`U+2028`, `U+2029`), no bidirectional text controls " +
	"(`U+061C`, `U+200E`, `U+200F`, `U+202A`-`U+202E`, `U+2066`-`U+2069`), and only valid UTF-8"

type nodePath struct{}

func (nodePath) Description(context.Context) string         { return nodePathDescription }
func (nodePath) MarkdownDescription(context.Context) string { return nodePathDescription }

func (nodePath) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := CheckNodePath(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid character in path", fmt.Sprintf("Attribute %s: %s.", req.Path, err))
	}
}

// PathCharError says which character of a path NodePath refuses, and where.
type PathCharError struct {
	Path string
	// Offset is the byte offset of the character in Path, from 0.
	Offset int
	// Rune is the character; utf8.RuneError for a byte that is not valid UTF-8.
	Rune rune
}

func (e *PathCharError) Error() string {
	before := ""
	if e.Offset > 0 {
		before = fmt.Sprintf(", after %q", tail(e.Path[:e.Offset], 32))
	}
	if e.Rune == utf8.RuneError {
		return fmt.Sprintf("%q holds a byte that is not valid UTF-8 (0x%02X) at byte %d%s; a path on a node or in a volume must be valid UTF-8: remove it",
			e.Path, e.Path[e.Offset], e.Offset, before)
	}
	kind, why := "a control character", "cannot hold control characters"
	switch {
	case e.Rune == '\u2028' || e.Rune == '\u2029':
		kind, why = "a Unicode line break", "cannot hold line breaks"
	case unicode.Is(unicode.Bidi_Control, e.Rune):
		kind, why = "a bidirectional text control", "cannot hold invisible characters that change how it is shown"
	}
	what := fmt.Sprintf("%U", e.Rune)
	if name := runeNames[e.Rune]; name != "" {
		what += ", " + name
	}
	return fmt.Sprintf("%q holds %s (%s) at byte %d%s; a path on a node or in a volume %s: remove it", e.Path, kind, what, e.Offset, before, why)
}

// CheckNodePath returns a *PathCharError for the first character of p that NodePath refuses,
// or nil.
func CheckNodePath(p string) error {
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		if invalid := r == utf8.RuneError && size == 1; invalid || refusedInPath(r) {
			return &PathCharError{Path: p, Offset: i, Rune: r}
		}
		i += size
	}
	return nil
}

// refusedInPath reports whether NodePath refuses the valid character r.
func refusedInPath(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)
}

// tail returns the last n bytes of s or fewer, starting on a character, with "..." before them
// when s is longer.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return "..." + s[i:]
}

// runeNames names the refused characters a user is most likely to meet.
var runeNames = map[rune]string{
	0x00: "NUL", 0x07: "a bell", 0x08: "a backspace", 0x09: "a tab", 0x0A: "a newline", 0x0B: "a vertical tab",
	0x0C: "a form feed", 0x0D: "a carriage return", 0x1B: "an escape", 0x7F: "DEL", 0x85: "a next line (NEL)",
	0x2028: "a line separator", 0x2029: "a paragraph separator",
	0x061C: "an Arabic letter mark", 0x200E: "a left-to-right mark", 0x200F: "a right-to-left mark",
	0x202A: "a left-to-right embedding", 0x202B: "a right-to-left embedding", 0x202C: "a pop directional formatting",
	0x202D: "a left-to-right override", 0x202E: "a right-to-left override",
	0x2066: "a left-to-right isolate", 0x2067: "a right-to-left isolate", 0x2068: "a first strong isolate", 0x2069: "a pop directional isolate",
}
