package libzone

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// A zone's bridge is not deleted with its zone: it is parked instead,
// without addresses or ports, under the root's spare name, and the next
// zone that needs a bridge renames it to its own. Unregistering a network
// device makes the kernel wait for an RCU grace period (rcu_barrier in
// netdev_run_todo), 25-45 ms on the project's host, which a container in a
// bridged zone of its own would otherwise pay at every delete; a rename
// takes under 1 ms. (A bridge cannot be handed to a
// namespace of its own for the kernel to free later: bridges are
// netns-local.) One spare per root: a second parked bridge is deleted.
// The spare outlives the root's last bridged zone when a container delete
// removed that zone (the container's own), as the root's kernel programs
// do; `zone delete` of the last bridged zone removes it, and so does
// reconcile when no zone is bridged. No nftables rule names the spare
// (the masquerading rule of the root's table, which stays with it, judges
// packets that came in through a bridge, and a spare has no port) and it
// forwards nothing.
const spareKind = "spare"

func spareName(root string) string { return bridgePrefix + shortHash(root, 4) + "-spare" }

func spareAlias(root string) string { return linkAlias(root, spareKind, "bridge") }

// parkBridge makes br, the bridge of a deleted zone, the root's spare. It
// reports false when br could not be parked (a spare exists already, or a
// step failed): the caller deletes br then.
func (e *Engine) parkBridge(br netlink.Link) bool {
	if flushAddrs(br) != nil {
		return false
	}
	// An IPv6 zone's bridge forwards IPv6 on its own (bridge6.go); the
	// next zone may not be an IPv6 one. Kernels without the knob never
	// set it.
	ff := "/proc/sys/net/ipv6/conf/" + br.Attrs().Name + "/force_forwarding"
	if err := os.WriteFile(ff, []byte("0"), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false
	}
	unlock, err := e.lockSpare()
	if err != nil {
		return false
	}
	defer unlock()
	// The spare stays up: setting a device down waits for an RCU grace
	// period (synchronize_net in dev_deactivate_many), and a bridge
	// without a port has no carrier, so the kernel gives it no address
	// and it forwards nothing. Kernels before 6.2 rename a device only
	// while it is down.
	err = relink(br, spareName(e.root), spareAlias(e.root), false)
	if errors.Is(err, unix.EBUSY) {
		if err = netlink.LinkSetDown(br); err == nil {
			err = relink(br, spareName(e.root), spareAlias(e.root), false)
		}
	}
	return err == nil
}

// relink renames br and gives it alias, and sets it up when up, in one
// request: the kernel renames before it changes the flags, so a bridge
// parked down is renamed down.
func relink(br netlink.Link, name, alias string, up bool) error {
	la := netlink.NewLinkAttrs()
	la.Index, la.Name, la.Alias = br.Attrs().Index, name, alias
	if up {
		la.Flags = net.FlagUp
	}
	if err := netlink.LinkModify(&netlink.Bridge{LinkAttrs: la}); err != nil {
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
func (e *Engine) takeSpare(name, alias string) (netlink.Link, error) {
	unlock, err := e.lockSpare()
	if err != nil {
		return nil, err
	}
	defer unlock()
	br, err := netlink.LinkByName(spareName(e.root))
	if errors.As(err, &netlink.LinkNotFoundError{}) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", spareName(e.root), err)
	}
	if br.Attrs().Alias != spareAlias(e.root) || br.Type() != "bridge" {
		// Not parked by this root, or a park that died before its
		// alias: reconcile judges it; a new bridge is made meanwhile.
		return nil, nil
	}
	// No address to flush: parkBridge gives the spare its alias only
	// after removing every address of the bridge, which has no port (no
	// carrier: the kernel adds none); a park that died before that left
	// no spare to take. Up before its address: it has no port yet.
	if err := relink(br, name, alias, true); errors.Is(err, unix.ENODEV) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("rename spare bridge %s to %s: %w", spareName(e.root), name, err)
	}
	return br, nil
}

// dropSpare deletes the root's spare bridge, if any.
func (e *Engine) dropSpare() error {
	br, err := netlink.LinkByName(spareName(e.root))
	if errors.As(err, &netlink.LinkNotFoundError{}) {
		return nil
	}
	// No alias: a park that died before naming it (the name holds the
	// root's hash).
	if a := br.Attrs().Alias; err == nil && (a == spareAlias(e.root) || a == "") {
		err = netlink.LinkDel(br)
	}
	if err != nil && !errors.As(err, &netlink.LinkNotFoundError{}) && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("remove spare bridge %s: %w", spareName(e.root), err)
	}
	return nil
}

// lockSpare serializes the renames of the spare: without it, two creates
// could both find the spare and the second rename the first's bridge.
func (e *Engine) lockSpare() (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(e.root, "spare-bridge.lock"), os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spare bridge lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("spare bridge lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// flushAddrs removes every address of l, of every family.
func flushAddrs(l netlink.Link) error {
	addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("addresses of %s: %w", l.Attrs().Name, err)
	}
	for _, a := range addrs {
		if err := netlink.AddrDel(l, &a); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
			return fmt.Errorf("%s: remove address %s: %w", l.Attrs().Name, a.IPNet, err)
		}
	}
	return nil
}
