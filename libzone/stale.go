package libzone

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// removeStaleCgroup removes the cgroup a create that was killed before
// libcontainer saved its state left behind, in every hierarchy (v1
// controllers and the unified one). libcontainer creates the cgroups
// before it writes state.json, so without this they would belong to no
// container. An orphan init still waiting for its parent is killed first.
// path is the record's cgroup path; an empty or root path names nothing.
func removeStaleCgroup(path string) error {
	path = filepath.Clean("/" + path)
	if path == "/" {
		return nil
	}
	hs, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return fmt.Errorf("list cgroup hierarchies: %w", err)
	}
	var dirs []string
	for _, h := range hs {
		if !h.IsDir() { // cpu -> cpu,cpuacct and the like
			continue
		}
		dir := filepath.Join("/sys/fs/cgroup", h.Name(), path)
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err == nil {
			dirs = append(dirs, dir)
		}
	}
	if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", path, "cgroup.procs")); err == nil {
		dirs = append(dirs, filepath.Join("/sys/fs/cgroup", path)) // cgroup2-only host
	}
	var errs []error
	for _, dir := range dirs {
		if err := removeCgroupDir(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeCgroupDir kills what is left in one cgroup directory and removes
// it. The kernel refuses rmdir until the killed tasks have exited, so it
// retries for a short while.
func removeCgroupDir(dir string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
					_ = unix.Kill(pid, unix.SIGKILL)
				}
			}
		}
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove stale cgroup %s: %w", dir, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// creatorAlive reports whether the rauha process that stored a record in
// the creating state may still be running its create.
func creatorAlive(pid int) bool {
	if pid <= 0 {
		return true // a record from before creators were recorded: trust the grace period
	}
	return unix.Kill(pid, 0) == nil
}
