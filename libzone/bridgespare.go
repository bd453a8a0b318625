package libzone

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// A zone's bridge is not deleted with its zone: it is parked instead,
// without addresses or ports, under its name, with the root's spare alias,
// and the next zone that needs a bridge renames it to its own. Unregistering
// a network device makes the kernel wait for an RCU grace period
// (rcu_barrier in netdev_run_todo), 25-45 ms on the project's host, which a
// container in a bridged zone of its own would otherwise pay at every
// delete. Parking changes the alias alone: a rename makes the kernel wait
// for an RCU grace period too (synchronize_net in dev_change_name) and
// re-registers the device's sysctl directories, 0.4-12 ms at a delete,
// where it meets the kernel's teardown of the member's network namespace.
// The spare's name is kept in the spare lock file, so the next create
// finds it with one request. (A bridge cannot be handed to a namespace of
// its own for the kernel to free later: bridges are netns-local.) One
// spare per root: a second parked bridge is deleted. The spare outlives
// the root's last bridged zone when a container delete removed that zone
// (the container's own), as the root's kernel programs do; `zone delete`
// of the last bridged zone removes it, and so does reconcile when no zone
// is bridged. No nftables rule names the spare (the masquerading rule of
// the root's table, which stays with it, judges packets that came in
// through a bridge, and a spare has no port) and it forwards nothing.
const spareKind = "spare"

// spareName is where spares were parked before their name was kept in the
// lock file (one left by an older rauha is still taken from there), and
// the name reconcile gives a bridge without an alias there.
func spareName(root string) string { return bridgePrefix + shortHash(root, 4) + "-spare" }

func spareAlias(root string) string { return linkAlias(root, spareKind, "bridge") }

// parkBridge makes br, the bridge of a deleted zone, the root's spare. It
// reports false when br could not be parked (a spare exists already, or a
// step failed): the caller deletes br then. A member's veth the kernel has
// not yet removed with its namespace may still be a port of br: it goes
// with the namespace, and the bridge's carrier with it.
func (e *Engine) parkBridge(h *netlink.Handle, br netlink.Link) bool {
	if flushAddrs(h, br) != nil {
		return false
	}
	// An IPv6 zone's bridge forwards IPv6 on its own (bridge6.go); the
	// next zone may not be an IPv6 one. Kernels without the knob never
	// set it.
	ff := "/proc/sys/net/ipv6/conf/" + br.Attrs().Name + "/force_forwarding"
	if err := os.WriteFile(ff, []byte("0"), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false
	}
	lock, err := e.lockSpare()
	if err != nil {
		return false
	}
	defer lock.Close()
	if name := readSpare(lock); name != "" && name != br.Attrs().Name {
		if l, err := h.LinkByName(name); err == nil && l.Attrs().Alias == spareAlias(e.root) {
			return false
		}
	}
	// The spare stays up: setting a device down waits for an RCU grace
	// period (synchronize_net in dev_deactivate_many), and a bridge
	// without a port has no carrier, so the kernel gives it no address
	// and it forwards nothing.
	if err := setAlias(h, br, spareAlias(e.root)); err != nil {
		return false
	}
	return writeSpare(lock, br.Attrs().Name) == nil
}

// relink renames br and gives it alias, and sets it up when up, in one
// request: the kernel renames before it changes the flags, so a bridge
// parked down is renamed down. A rename to its own name changes nothing.
func relink(h *netlink.Handle, br netlink.Link, name, alias string, up bool) error {
	la := netlink.NewLinkAttrs()
	la.Index, la.Name, la.Alias = br.Attrs().Index, name, alias
	if up {
		la.Flags = net.FlagUp
	}
	if err := h.LinkModify(&netlink.Bridge{LinkAttrs: la}); err != nil {
		return err
	}
	br.Attrs().Name, br.Attrs().Alias = name, alias
	if up {
		br.Attrs().Flags |= net.FlagUp
	}
	return nil
}

// takeSpare renames the root's spare bridge, if there is one, to name with
// alias and returns it, up and without addresses; nil if there is none (or
// another create took it first).
func (e *Engine) takeSpare(h *netlink.Handle, name, alias string) (netlink.Link, error) {
	lock, err := e.lockSpare()
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	sn := readSpare(lock)
	if sn == "" {
		sn = spareName(e.root)
	}
	br, err := h.LinkByName(sn)
	if errors.As(err, &netlink.LinkNotFoundError{}) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", sn, err)
	}
	if br.Attrs().Alias != spareAlias(e.root) || br.Type() != "bridge" {
		// Not parked by this root, or a park that died before its
		// alias: reconcile judges it; a new bridge is made meanwhile.
		return nil, nil
	}
	// No address to flush: parkBridge gives the spare its alias only
	// after removing every address of the bridge, which then has no
	// port (no carrier: the kernel adds none); a park that died before
	// that left no spare to take. Up before its address: it has no port
	// yet. Kernels before 6.2 rename a device only while it is down.
	err = relink(h, br, name, alias, true)
	if errors.Is(err, unix.EBUSY) {
		if err = h.LinkSetDown(br); err == nil {
			err = relink(h, br, name, alias, true)
		}
	}
	if errors.Is(err, unix.ENODEV) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("rename spare bridge %s to %s: %w", sn, name, err)
	}
	if err := writeSpare(lock, ""); err != nil {
		return nil, err
	}
	return br, nil
}

// dropSpare deletes the root's spare bridge, if any: the one the lock file
// names, and one an older rauha parked under spareName.
func (e *Engine) dropSpare(h *netlink.Handle) error {
	lock, err := e.lockSpare()
	if err != nil {
		return err
	}
	defer lock.Close()
	names := []string{spareName(e.root)}
	if sn := readSpare(lock); sn != "" && sn != names[0] {
		names = append(names, sn)
	}
	for _, sn := range names {
		br, err := h.LinkByName(sn)
		if errors.As(err, &netlink.LinkNotFoundError{}) {
			continue
		}
		// No alias: a park of an older rauha that died before naming
		// it (the name holds the root's hash).
		if a := br.Attrs().Alias; err == nil && (a == spareAlias(e.root) || (a == "" && sn == spareName(e.root))) {
			err = h.LinkDel(br)
		}
		if err != nil && !errors.As(err, &netlink.LinkNotFoundError{}) && !errors.Is(err, unix.ENODEV) {
			return fmt.Errorf("remove spare bridge %s: %w", sn, err)
		}
	}
	return writeSpare(lock, "")
}

// lockSpare serializes the parks and takes of the spare: without it, two
// creates could both find the spare and the second rename the first's
// bridge. The locked file holds the spare's name (readSpare).
func (e *Engine) lockSpare() (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(e.root, "spare-bridge.lock"), os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spare bridge lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("spare bridge lock: %w", err)
	}
	return f, nil
}

// keptSpare returns the name of the root's spare, "" when none is kept
// (spareName when none is named: a spare parked by an older rauha).
func (e *Engine) keptSpare() string {
	lock, err := e.lockSpare()
	if err != nil {
		return ""
	}
	defer lock.Close()
	if sn := readSpare(lock); sn != "" {
		return sn
	}
	return spareName(e.root)
}

// readSpare returns the spare's name kept in the locked file, "" when
// none is (or the file cannot be read: the spare, if any, is then found
// by reconcile, by its alias).
func readSpare(f *os.File) string {
	b := make([]byte, unix.IFNAMSIZ)
	n, _ := f.ReadAt(b, 0)
	return strings.TrimSpace(string(b[:n]))
}

// writeSpare keeps name as the spare's in the locked file ("" for none).
// Not synced: after a crash, a spare the file does not name is removed by
// reconcile.
func writeSpare(f *os.File, name string) error {
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("spare bridge lock: %w", err)
	}
	if _, err := f.WriteAt([]byte(name), 0); err != nil {
		return fmt.Errorf("spare bridge lock: %w", err)
	}
	return nil
}

// flushAddrs removes every address of l, of every family.
func flushAddrs(h *netlink.Handle, l netlink.Link) error {
	addrs, err := h.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("addresses of %s: %w", l.Attrs().Name, err)
	}
	for _, a := range addrs {
		if err := h.AddrDel(l, &a); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
			return fmt.Errorf("%s: remove address %s: %w", l.Attrs().Name, a.IPNet, err)
		}
	}
	return nil
}
