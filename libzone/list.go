package libzone

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/sirupsen/logrus"
)

// List returns the state of every container under the engine's root, in
// directory order, with Owner filled in (as "runc list" shows it).
//
// It reads each container's state.json itself (statefile.go) rather than
// loading the container through libcontainer, which made list take 0.6 ms
// per container (over 300 ms at 500).
func (e *Engine) List() ([]State, error) {
	entries, err := os.ReadDir(e.root)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil // a fresh root has no containers
		}
		return nil, fmt.Errorf("list containers in %s: %w", e.root, err)
	}
	var dirs []os.DirEntry
	for _, ent := range entries {
		if ent.IsDir() {
			dirs = append(dirs, ent)
		}
	}
	// Each container costs a handful of system calls and a JSON decode:
	// read them on every CPU (500 containers: 102 ms on one CPU, 75 on two).
	states := make([]*State, len(dirs))
	uids := make([]int64, len(dirs))
	eachParallel(len(dirs), func(i int) {
		st, err := e.State(dirs[i].Name())
		if err != nil {
			// A create that died before writing its state leaves a bare
			// directory: not a container, and not worth failing the list.
			logrus.Debugf("list: skip %s: %v", dirs[i].Name(), err)
			return
		}
		uids[i] = -1
		if fi, err := dirs[i].Info(); err == nil {
			if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
				uids[i] = int64(sys.Uid)
			}
		}
		states[i] = st
	})
	var out []State
	owners := map[uint32]string{}
	for i, st := range states {
		if st == nil {
			continue
		}
		if uids[i] >= 0 {
			st.Owner = ownerName(owners, uint32(uids[i]))
		}
		out = append(out, *st)
	}
	return out, nil
}

// eachParallel calls fn(0) … fn(n-1) on up to GOMAXPROCS goroutines; a
// short list is not worth starting them.
func eachParallel(n int, fn func(int)) {
	workers := min(runtime.GOMAXPROCS(0), n/16)
	if workers < 2 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		})
	}
	wg.Wait()
}

func ownerName(cache map[uint32]string, uid uint32) string {
	if n, ok := cache[uid]; ok {
		return n
	}
	n := "#" + strconv.Itoa(int(uid))
	if u, err := user.LookupId(strconv.Itoa(int(uid))); err == nil {
		n = u.Username
	}
	cache[uid] = n
	return n
}
