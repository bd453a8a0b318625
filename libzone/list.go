package libzone

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"github.com/sirupsen/logrus"
)

// List returns the state of every container under the engine's root, in
// directory order, with Owner filled in (as "runc list" shows it).
func (e *Engine) List() ([]State, error) {
	entries, err := os.ReadDir(e.root)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil // a fresh root has no containers
		}
		return nil, fmt.Errorf("list containers in %s: %w", e.root, err)
	}
	var out []State
	owners := map[uint32]string{}
	for _, ent := range entries {
		if !ent.IsDir() {
			continue
		}
		c, err := e.Load(ent.Name())
		if err != nil {
			// A create that died before writing its state leaves a bare
			// directory: not a container, and not worth failing the list.
			logrus.Debugf("list: skip %s: %v", ent.Name(), err)
			continue
		}
		st, err := c.State()
		if err != nil {
			logrus.Debugf("list: skip %s: %v", ent.Name(), err)
			continue
		}
		if fi, err := ent.Info(); err == nil {
			if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
				st.Owner = ownerName(owners, sys.Uid)
			}
		}
		out = append(out, *st)
	}
	return out, nil
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
