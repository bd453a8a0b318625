package libzone

import (
	"os"
	"syscall"
)

// inode is a file's inode number; for a cgroup v2 directory it is the
// cgroup id the kernel's BPF helpers report.
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
