// Package uring submits single io_uring requests and waits for their
// completion, with raw syscalls: enough to reach files the way an attacker
// inside a zone would without open(2) or unlink(2), for the tests that show
// what a zone does to such requests. It is not a general io_uring library.
package uring

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Opcodes (include/uapi/linux/io_uring.h, enum io_uring_op).
const (
	OpOpenat   = 18
	OpRenameat = 35
	OpUnlinkat = 36
	OpMkdirat  = 37
)

// SQE is the part of a submission queue entry the opcodes above use
// (struct io_uring_sqe).
type SQE struct {
	Opcode  uint8
	Fd      int32
	Off     uint64 // addr2: RENAMEAT's new path
	Addr    uint64 // the path
	Len     uint32 // OPENAT, MKDIRAT: the mode; RENAMEAT: the new directory fd
	OpFlags uint32 // open_flags, unlink_flags, rename_flags
}

// params is struct io_uring_params.
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

// sqOffsets is struct io_sqring_offsets.
type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

// cqOffsets is struct io_cqring_offsets.
type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

const (
	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000
	enterWait = 1 // IORING_ENTER_GETEVENTS
	sqeSize   = 64
	cqeSize   = 16
)

// Do submits e on a ring of its own, waits for its completion and returns
// the completion's result: what the operation's syscall would have returned,
// a negative errno on failure. err is for the ring itself (io_uring_setup or
// io_uring_enter failed).
//
// A request io_uring cancels before it ran (ECANCELED) is submitted again,
// up to 5 times: an operation that blocks runs in an io-wq worker thread,
// and on 6.1 a worker whose creation a pending signal interrupts (the Go
// runtime's preemption SIGURG) is given up after a few tries, cancelling
// the request it was for.
func Do(e SQE, keep ...any) (res int32, err error) {
	for range 5 {
		if res, err = do(e, keep); err != nil || res != -int32(unix.ECANCELED) {
			break
		}
	}
	return res, err
}

func do(e SQE, keep []any) (res int32, err error) {
	var p params
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return 0, fmt.Errorf("io_uring_setup: %w", errno)
	}
	defer unix.Close(int(fd))
	sq, err := unix.Mmap(int(fd), offSQRing, int(p.sqOff.array+p.sqEntries*4), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return 0, fmt.Errorf("mmap the submission ring: %w", err)
	}
	defer unix.Munmap(sq)
	cq, err := unix.Mmap(int(fd), offCQRing, int(p.cqOff.cqes+p.cqEntries*cqeSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return 0, fmt.Errorf("mmap the completion ring: %w", err)
	}
	defer unix.Munmap(cq)
	sqes, err := unix.Mmap(int(fd), offSQEs, int(p.sqEntries*sqeSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return 0, fmt.Errorf("mmap the submission entries: %w", err)
	}
	defer unix.Munmap(sqes)

	word := func(b []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }
	tail := atomic.LoadUint32(word(sq, p.sqOff.tail))
	slot := tail & *word(sq, p.sqOff.ringMask)
	s := sqes[slot*sqeSize : (slot+1)*sqeSize]
	clear(s)
	s[0] = e.Opcode
	*(*int32)(unsafe.Pointer(&s[4])) = e.Fd
	*(*uint64)(unsafe.Pointer(&s[8])) = e.Off
	*(*uint64)(unsafe.Pointer(&s[16])) = e.Addr
	*(*uint32)(unsafe.Pointer(&s[24])) = e.Len
	*(*uint32)(unsafe.Pointer(&s[28])) = e.OpFlags
	*word(sq, p.sqOff.array+slot*4) = slot
	atomic.StoreUint32(word(sq, p.sqOff.tail), tail+1)

	// A signal (the Go runtime's preemption SIGURG) ends the wait early:
	// io_uring_enter then returns what it submitted, or EINTR when that
	// was nothing. Wait again until the completion is there.
	head := atomic.LoadUint32(word(cq, p.cqOff.head))
	for submit := uintptr(1); head == atomic.LoadUint32(word(cq, p.cqOff.tail)); {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, fd, submit, 1, enterWait, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, fmt.Errorf("io_uring_enter: %w", errno)
		}
		submit -= min(n, submit)
	}
	runtime.KeepAlive(keep) // the memory Addr and Off point to
	off := p.cqOff.cqes + (head&*word(cq, p.cqOff.ringMask))*cqeSize
	res = *(*int32)(unsafe.Pointer(&cq[off+8])) // struct io_uring_cqe: user_data, res, flags
	atomic.StoreUint32(word(cq, p.cqOff.head), head+1)
	return res, nil
}

// CString is s NUL-terminated, and its address for SQE.Addr; pass the slice
// to Do (keep) so that it stays alive until the request completes.
func CString(s string) ([]byte, uint64) {
	b := append([]byte(s), 0)
	return b, uint64(uintptr(unsafe.Pointer(&b[0])))
}
