package node

import (
	"errors"
	"fmt"
	"strings"
)

// redacted replaces secret arguments wherever a command is shown.
const redacted = "<redacted>"

// ErrNUL is returned for a command argument holding a NUL byte, which no shell argument can carry.
var ErrNUL = errors.New("argument contains a NUL byte, which a shell argument cannot carry")

// Quote returns s as one POSIX shell word that the shell reads back as exactly s: s unchanged when
// it only holds characters no shell treats specially, otherwise s in single quotes, with each single
// quote inside written as: close quote, backslash, quote, open quote. A NUL byte cannot be carried
// by any shell word; Command.Render rejects it, so build commands with Command rather than calling
// Quote directly.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if isPlainWord(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isPlainWord reports whether every byte of s is one that no POSIX shell treats specially in any
// position. '=' is left out (NAME=value as the first word is an assignment), and so are '~', '#',
// globbing and brace characters.
func isPlainWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("_-./:,@%+", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// Command is a program and its arguments (argv), run on a node without any shell interpreting
// them: Render quotes every argument. Arguments added with Secret are shown as <redacted> by
// String. The zero Command is empty and fails to render.
type Command struct {
	argv   []string
	secret []bool
}

// NewCommand returns the command program with args.
func NewCommand(program string, args ...string) Command {
	return Command{}.Arg(program).Arg(args...)
}

// Script returns a command that runs a fixed POSIX sh script with args as its positional
// parameters ($1, $2, ...): `sh -c script sh args...`. The script must be constant text written in
// the code; every value goes into args, which the script reads as "$1", "$2", always double-quoted.
func Script(script string, args ...string) Command {
	return NewCommand("sh", "-c", script, "sh").Arg(args...)
}

// Arg returns a copy of c with args appended.
func (c Command) Arg(args ...string) Command {
	out := c.clone(len(args))
	for _, a := range args {
		out.argv = append(out.argv, a)
		out.secret = append(out.secret, false)
	}
	return out
}

// Secret returns a copy of c with a secret argument appended: it is passed as given but shown as
// <redacted> in String, logs and errors. Prefer passing secrets on stdin: arguments are visible to
// other users of the node in the process list.
func (c Command) Secret(arg string) Command {
	out := c.clone(1)
	out.argv = append(out.argv, arg)
	out.secret = append(out.secret, true)
	return out
}

// prefix returns a copy of c with args put before its program (for sudo).
func (c Command) prefix(args ...string) Command {
	out := Command{}.Arg(args...)
	out.argv = append(out.argv, c.argv...)
	out.secret = append(out.secret, c.secret...)
	return out
}

func (c Command) clone(extra int) Command {
	out := Command{
		argv:   make([]string, len(c.argv), len(c.argv)+extra),
		secret: make([]bool, len(c.secret), len(c.secret)+extra),
	}
	copy(out.argv, c.argv)
	copy(out.secret, c.secret)
	return out
}

// Argv returns a copy of the program and its arguments, secrets included.
func (c Command) Argv() []string {
	return append([]string(nil), c.argv...)
}

// Render returns the command line to send to the node's shell: every argument quoted with Quote,
// separated by spaces. It fails for an empty command and for an argument holding a NUL byte.
func (c Command) Render() (string, error) {
	if len(c.argv) == 0 {
		return "", errors.New("empty command")
	}
	words := make([]string, len(c.argv))
	for i, a := range c.argv {
		if strings.IndexByte(a, 0) >= 0 {
			return "", fmt.Errorf("argument %d of %s: %w", i, c.String(), ErrNUL)
		}
		words[i] = Quote(a)
	}
	return strings.Join(words, " "), nil
}

// String returns the command as Render would, with secret arguments replaced by <redacted> and
// NUL bytes shown as \x00: safe for logs and error messages.
func (c Command) String() string {
	words := make([]string, len(c.argv))
	for i, a := range c.argv {
		if c.secret[i] {
			words[i] = redacted
			continue
		}
		words[i] = Quote(shortScript(strings.ReplaceAll(a, "\x00", `\x00`)))
	}
	return strings.Join(words, " ")
}

// shortScript shows an argument of several lines (a script) by its first line and its length:
// errors and logs name the command without quoting a whole program.
func shortScript(a string) string {
	first, _, ok := strings.Cut(a, "\n")
	if !ok {
		return a
	}
	return fmt.Sprintf("%s … (a script of %d lines)", strings.TrimSpace(first), strings.Count(strings.TrimRight(a, "\n"), "\n")+1)
}
