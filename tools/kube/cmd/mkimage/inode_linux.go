package main

import (
	"io/fs"
	"syscall"
)

// inodeKey identifies a file by device and inode, to find hard links.
func inodeKey(fi fs.FileInfo) ([2]uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink < 2 {
		return [2]uint64{}, false
	}
	return [2]uint64{uint64(st.Dev), st.Ino}, true
}
