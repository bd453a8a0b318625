package libzone

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// wiring is a bridged member's network being wired to its zone's bridge
// (plugMember) beside the rest of create: 3-4 ms of netlink, spent while
// create waits for libcontainer's init anyway. The wiring needs the
// member's network namespace, which the init would make in its clone and
// name to rauha only at the createRuntime hooks, a few ms before it is
// ready: too late. So rauha makes the namespace as soon as admission has
// leased the member its address, and the init joins it by path:
// /proc/PID/fd/N of this process. The wiring brings its loopback up, which
// the init does in a namespace it makes: with the init doing it beside the
// wiring, the init was 1.4 ms slower to be ready (likely its request
// waiting on the RTNL lock the wiring's requests hold; not traced). A
// namespace owned by a user namespace of the member's own cannot be made
// before the init: such a member is wired once its init is ready
// (wiredAddrs), as before.
//
// The configuration libcontainer stores then says what the bundle asked
// for, not the path: a hook of rauha's, after the bundle's createRuntime
// hooks (which keep their numbers in libcontainer's errors), which
// libcontainer runs in this process before it stores the state (and long
// after the init joined the namespace), puts back the namespace entry
// without a path and the loopback network, and takes itself out. Every
// later reader (verify, reconcile, the rules of exec) judges the namespace
// as the member's own, which it is. libcontainer warns that it cannot pass
// the hook to the init (only the parent runs createRuntime hooks):
// QuietFormatter drops that warning.
type wiring struct {
	made  chan madeNetns // sent once, before the wiring starts
	taken bool           // joinWiring received from made
	ns    netns.NsHandle // the init's path names it: open until it joined
	wired func() ([]string, error)
}

type madeNetns struct {
	ns  netns.NsHandle
	err error
}

// startWiring starts making a bridged member's network namespace and
// wiring it, beside the rest of create.
func (e *Engine) startWiring(a *admission) {
	if a.rec.Lease == nil || a.config.Namespaces.Contains(configs.NEWUSER) {
		return
	}
	w := &wiring{made: make(chan madeNetns, 1), ns: -1}
	a.wiring = w
	w.wired = beside(func() ([]string, error) {
		ns, own, err := newNetns()
		w.made <- madeNetns{ns, err}
		if err != nil {
			return nil, fmt.Errorf("container %s: %w", a.rec.ID, err)
		}
		defer own.Close()
		return e.plugMember(a.zone.Name, a.rec, own)
	})
}

// joinWiring points the init's configuration at the namespace startWiring
// made. Call it last before the init starts: the process's rules are
// judged on the namespace the bundle asked for.
func (a *admission) joinWiring() error {
	w := a.wiring
	if w == nil {
		return nil
	}
	m := <-w.made
	w.taken = true
	if m.err != nil {
		return m.err
	}
	w.ns = m.ns
	cfg := a.config
	networks := cfg.Networks
	cfg.Networks = slices.DeleteFunc(slices.Clone(networks), func(n *configs.Network) bool { return n.Type == "loopback" })
	cfg.Namespaces.Add(configs.NEWNET, "/proc/"+strconv.Itoa(os.Getpid())+"/fd/"+strconv.Itoa(int(w.ns)))
	if cfg.Hooks == nil {
		cfg.Hooks = configs.Hooks{}
	}
	bundles := cfg.Hooks[configs.CreateRuntime]
	restore := configs.NewFunctionHook(func(*specs.State) error {
		if len(bundles) == 0 {
			delete(cfg.Hooks, configs.CreateRuntime)
		} else {
			cfg.Hooks[configs.CreateRuntime] = bundles
		}
		cfg.Networks = networks
		cfg.Namespaces.Add(configs.NEWNET, "")
		w.close() // the init is in it
		return nil
	})
	cfg.Hooks[configs.CreateRuntime] = append(slices.Clip(bundles), restore)
	return nil
}

func (w *wiring) close() {
	if w.ns >= 0 {
		w.ns.Close()
		w.ns = -1
	}
}

// wiredAddrs returns the addresses of a bridged member (its init is pid,
// ready) once it is wired: the wiring's, or, when none was started, those
// of plugMember run now.
func (e *Engine) wiredAddrs(a *admission, pid int) ([]string, error) {
	if a.wiring != nil {
		return a.wiring.wired()
	}
	ns, err := netns.GetFromPath("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		return nil, fmt.Errorf("open the network namespace of pid %d: %w", pid, err)
	}
	defer ns.Close()
	return e.plugMember(a.zone.Name, a.rec, ns)
}

// stopWiring waits for a wiring, which undoCreate removes when the create
// failed (call it first), and closes its namespace if the init never
// joined it (the kernel then removes the veth with it).
func (a *admission) stopWiring() {
	if w := a.wiring; w != nil {
		_, _ = w.wired()
		if !w.taken {
			w.taken = true
			if m := <-w.made; m.err == nil {
				m.ns.Close()
			}
		}
		w.close()
	}
}

// newNetns makes a network namespace and returns it open twice (one for
// the init's path, one for the wiring, each closed when its user is done
// with it). It locks the calling goroutine's thread to make it, then
// returns the thread to the namespace it came from; a thread that cannot
// is never unlocked and ends with the goroutine, so no other goroutine
// runs in a namespace it did not ask for.
func newNetns() (ns, ns2 netns.NsHandle, err error) {
	runtime.LockOSThread()
	own, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return -1, -1, fmt.Errorf("open the network namespace of this thread: %w", err)
	}
	defer own.Close()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return -1, -1, fmt.Errorf("new network namespace: %w", err)
	}
	ns, err = netns.Get()
	if err == nil {
		if ns2, err = netns.Get(); err != nil {
			ns.Close()
		}
	}
	if serr := netns.Set(own); serr != nil {
		if err == nil {
			ns.Close()
			ns2.Close()
		}
		return -1, -1, fmt.Errorf("return from a new network namespace: %w", serr)
	}
	runtime.UnlockOSThread()
	if err != nil {
		return -1, -1, fmt.Errorf("open the new network namespace: %w", err)
	}
	return ns, ns2, nil
}

// funcHookWarning is what libcontainer logs when it sends the init a
// configuration holding a function hook (wiring), at every bridged create.
const funcHookWarning = "cannot serialize hook of type configs.FuncHook, skipping"

type quietFormatter struct{ logrus.Formatter }

// QuietFormatter wraps a log formatter: it formats every record as f does
// but libcontainer's warning about the hook of wiring, which describes no
// problem, and leaves it out.
func QuietFormatter(f logrus.Formatter) logrus.Formatter { return quietFormatter{f} }

func (q quietFormatter) Format(e *logrus.Entry) ([]byte, error) {
	if e.Level == logrus.WarnLevel && e.Message == funcHookWarning {
		return nil, nil
	}
	return q.Formatter.Format(e)
}
