// Package flock takes flock(2) locks. rauha has no daemon: concurrent rauha
// processes serialise on file locks, which the kernel drops when a process
// dies, however it dies.
package flock

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Lock is a blocking flock(fd, how) that is retried when a signal
// interrupts it (rauha catches every signal to forward it).
func Lock(fd int, how int) error {
	for {
		if err := unix.Flock(fd, how); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
