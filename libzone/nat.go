package libzone

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/zone"
)

// natTable is the nftables table of one root's bridged zones: one
// masquerading rule for all of them, and the DNAT of published ports.
// rauha adds, removes and rebuilds rules in this table only (never another
// table's), each port rule tagged (UserData) with its container, makes the
// table with the root's first bridged zone and deletes it with the last,
// unless a container delete removed that zone (the container's own): then
// the table stays with the spare bridge (unplugZone) until the next
// bridged zone, `zone delete` of the last one or reconcile.
type natTable struct {
	table *nftables.Table
}

func newNATTable(root string) natTable {
	return natTable{table: &nftables.Table{Family: nftables.TableFamilyINet, Name: "rauha_" + shortHash(root, 8)}}
}

// The table's chains. Published ports are rewritten on the way in
// (prerouting) and for the host's own connections (output), to any local
// address of the host: 127.0.0.1 is not one of them, as the kernel does not
// route loopback-sourced packets out of the host (route_localnet).
func (t natTable) chains() (post, pre, out *nftables.Chain) {
	mk := func(name string, hook *nftables.ChainHook, prio *nftables.ChainPriority) *nftables.Chain {
		return &nftables.Chain{Name: name, Table: t.table, Type: nftables.ChainTypeNAT, Hooknum: hook, Priority: prio}
	}
	return mk("postrouting", nftables.ChainHookPostrouting, nftables.ChainPriorityNATSource),
		mk("prerouting", nftables.ChainHookPrerouting, nftables.ChainPriorityNATDest),
		mk("output", nftables.ChainHookOutput, nftables.ChainPriorityNATDest)
}

func containerTag(id string) []byte { return []byte("container:" + id) }

func natConn() (*nftables.Conn, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	return c, nil
}

// ensure adds the table and its chains (an existing one is kept as is).
func (t natTable) ensure(c *nftables.Conn) (post, pre, out *nftables.Chain) {
	c.AddTable(t.table)
	post, pre, out = t.chains()
	c.AddChain(post)
	c.AddChain(pre)
	c.AddChain(out)
	return post, pre, out
}

// create adds the table with its chains and the masquerading rule: what
// comes in through a rauha bridge and leaves through an interface that is
// not one is rewritten to the host's address. Packets to another rauha
// bridge keep their source: the receiving member's ingress program judges
// them by the sender's zone (allowed_zones), which a rewritten source
// would hide. Packets the host sends have no input interface and are left
// alone.
func (t natTable) create(c *nftables.Conn) (pre, out *nftables.Chain) {
	post, pre, out := t.ensure(c)
	c.AddRule(&nftables.Rule{Table: t.table, Chain: post, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte(bridgePrefix)},
		&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte(bridgePrefix)},
		&expr.Masq{},
	}})
	return pre, out
}

// addPorts forwards the member's published ports to its address, of
// either family (a member with an IPv6 lease gets both).
func (t natTable) addPorts(c *nftables.Conn, id string, addr netip.Addr, ports []zone.Port, pre, out *nftables.Chain) {
	for _, p := range ports {
		proto := byte(unix.IPPROTO_TCP)
		if p.Protocol == "udp" {
			proto = unix.IPPROTO_UDP
		}
		a, family := addr.AsSlice(), byte(unix.NFPROTO_IPV4)
		if addr.Is6() {
			family = unix.NFPROTO_IPV6
		}
		for _, ch := range []*nftables.Chain{pre, out} {
			c.AddRule(&nftables.Rule{Table: t.table, Chain: ch, UserData: containerTag(id), Exprs: []expr.Any{
				&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{family}},
				&expr.Fib{Register: 1, FlagDADDR: true, ResultADDRTYPE: true},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(unix.RTN_LOCAL)},
				&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.BigEndian.AppendUint16(nil, p.HostPort)},
				&expr.Immediate{Register: 1, Data: a},
				&expr.Immediate{Register: 2, Data: binary.BigEndian.AppendUint16(nil, p.ContainerPort)},
				&expr.NAT{Type: expr.NATTypeDestNAT, Family: uint32(family), RegAddrMin: 1, RegProtoMin: 2, Specified: true},
			}})
		}
	}
}

// delTagged deletes the rules of the table tagged tag. A table that does
// not exist has none.
func (t natTable) delTagged(c *nftables.Conn, tag []byte) error {
	post, pre, out := t.chains()
	for _, ch := range []*nftables.Chain{post, pre, out} {
		rules, err := c.GetRules(t.table, ch)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("nftables: list chain %s of table %s: %w", ch.Name, t.table.Name, err)
		}
		for _, r := range rules {
			if bytes.Equal(r.UserData, tag) {
				if err := c.DelRule(r); err != nil {
					return fmt.Errorf("nftables: delete rule %d of table %s: %w", r.Handle, t.table.Name, err)
				}
			}
		}
	}
	return nil
}

// exists reports whether the table is in the kernel.
func (t natTable) exists(c *nftables.Conn) (bool, error) {
	_, err := c.ListTableOfFamily(t.table.Name, t.table.Family)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("nftables: table %s: %w", t.table.Name, err)
	}
	return true, nil
}

// drop deletes the table, if it exists.
func (t natTable) drop(c *nftables.Conn) error {
	if ok, err := t.exists(c); err != nil || !ok {
		return err
	}
	c.DelTable(t.table)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: delete table %s: %w", t.table.Name, err)
	}
	return nil
}
