package node

import (
	"strconv"
	"strings"
)

// UnescapeMount decodes the octal escapes the kernel writes in the paths of its mount tables
// (/proc/<pid>/mountinfo, /proc/mounts) and that /etc/fstab uses: \040 for a space, \011 for a
// tab, \012 for a newline, \134 for a backslash. A backslash not followed by three octal digits
// is kept as it is.
func UnescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// EscapeMount encodes a path as mount tables and /etc/fstab write it: the inverse of
// UnescapeMount for the characters that would split or end a field.
func EscapeMount(s string) string {
	return mountEscaper.Replace(s)
}

var mountEscaper = strings.NewReplacer(`\`, `\134`, " ", `\040`, "\t", `\011`, "\n", `\012`)
