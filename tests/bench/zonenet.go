package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The zone-to-zone network part: a client container in one bridged zone
// sends to a listener container in a second bridged zone, the two zones
// allowing each other (network.allowed_zones), against the same two
// containers under runc on the same path without rauha: two bridges of
// the bench (scripts/bench.sh), each with a veth pair into a network
// namespace the container joins, forwarding on both, routed by the host
// like rauha's bridges. Both pairs run at the same time, in the same host
// namespace (so with the same connection tracking), and one exchange of
// each is taken in turn (netOrder). The rauha pair adds what a bridged
// zone adds to a packet: the client's cgroup_skb/egress and
// cgroup/connect4 programs, the listener's cgroup_skb/ingress and egress
// programs, and the zone lookups of both addresses.

// Zones and containers of this part.
const (
	zoneNetClientZone = "bench-za"
	zoneNetServerZone = "bench-zb"
	zoneNetClient     = "bench-zcli"
	zoneNetServer     = "bench-zsrv"
)

// zoneNetPolicy: a bridged zone that exchanges packets with its own
// members and peer's only (allowed_zones), and no other egress at all
// (allowed_egress = []), which the client's last connect, to the peer
// zone's gateway, proves: EPERM, where the runc pair gets ECONNREFUSED.
func zoneNetPolicy(peer, subnet string) string {
	return fmt.Sprintf(`[zone]
mode = "enforce"
admission = "audit"
[network]
mode = "bridged"
subnet = %q
allowed_zones = [%q]
allowed_egress = []
`, subnet, peer)
}

type zoneNetVariant struct {
	name   string
	r      *runtime
	addr   string // the listener, IPv4:port
	denied string // gateway of the listener's bridge, port+1
	want   string // how the connect to denied must end
}

// zoneNet runs the part; skipped without the bench's namespaces.
func (b *bench) zoneNet(ctx context.Context, res *results) error {
	c := b.cfg
	if c.zoneNetns == "" {
		fmt.Fprintln(os.Stderr, "bench: zonenet: skipped, no -zonenet-netns")
		return nil
	}
	nsA, nsB, ok := strings.Cut(c.zoneNetns, ",")
	if !ok {
		return fmt.Errorf("-zonenet-netns %q: want CLIENT,LISTENER", c.zoneNetns)
	}
	rc := b.runcs()
	r := b.rt("rauha")
	host, port, err := net.SplitHostPort(c.zoneNetAddr)
	if err != nil {
		return fmt.Errorf("-zonenet-addr %q: %w", c.zoneNetAddr, err)
	}
	p, _ := strconv.Atoi(port)
	deniedPort := strconv.Itoa(p + 1)
	base := gateway(host)
	vs := []*zoneNetVariant{
		{name: rc[0].name + " (bench bridges, no zone)", r: rc[0], addr: c.zoneNetAddr,
			denied: net.JoinHostPort(base, deniedPort), want: "ECONNREFUSED"},
		{name: "rauha, two bridged zones allowing each other", r: r, want: "EPERM"},
	}
	defer func() {
		for _, v := range vs {
			for _, id := range []string{zoneNetClient, zoneNetServer} {
				_, _ = v.r.invoke(nil, "delete", "--force", id)
				b.track(v.r, id, false)
			}
		}
		_, _ = r.invoke(nil, "zone", "delete", "--force", zoneNetClientZone)
		_, _ = r.invoke(nil, "zone", "delete", "--force", zoneNetServerZone)
	}()

	// runc: the containers join the bench's namespaces.
	if err := b.zoneNetStart(vs[0].r, zoneNetServer, nsB, nil, "0.0.0.0:"+port); err != nil {
		return fmt.Errorf("%s: %w", vs[0].name, err)
	}
	if err := b.zoneNetStart(vs[0].r, zoneNetClient, nsA, nil, ""); err != nil {
		return fmt.Errorf("%s: %w", vs[0].name, err)
	}
	// rauha: a namespace of their own each, wired to their zones'
	// bridges by rauha; the subnets are this part's, next to the bench's.
	for _, z := range []struct{ name, peer, subnet string }{
		{zoneNetClientZone, zoneNetServerZone, c.zoneNetSubnets[0]},
		{zoneNetServerZone, zoneNetClientZone, c.zoneNetSubnets[1]},
	} {
		pol := filepath.Join(c.work, z.name+".toml")
		if err := os.WriteFile(pol, []byte(zoneNetPolicy(z.peer, z.subnet)), 0o644); err != nil {
			return err
		}
		if _, err := r.invoke(nil, "zone", "create", z.name, "--policy", pol); err != nil {
			return err
		}
	}
	if err := b.zoneNetStart(r, zoneNetServer, "", map[string]string{"org.rauha.zone": zoneNetServerZone}, "0.0.0.0:"+port); err != nil {
		return fmt.Errorf("%s: %w", vs[1].name, err)
	}
	if err := b.zoneNetStart(r, zoneNetClient, "", map[string]string{"org.rauha.zone": zoneNetClientZone}, ""); err != nil {
		return fmt.Errorf("%s: %w", vs[1].name, err)
	}
	addr, err := b.memberAddr(r, zoneNetServerZone, zoneNetServer)
	if err != nil {
		return err
	}
	vs[1].addr = net.JoinHostPort(addr, port)
	vs[1].denied = net.JoinHostPort(gateway(addr), deniedPort)

	counts := []int{c.netBulkMiB, c.netRequests, c.netConns}
	rate, cpu := map[string][][]float64{}, map[string][][]float64{}
	for _, v := range vs {
		rate[v.name] = make([][]float64, len(netMetrics))
		cpu[v.name] = make([][]float64, len(netMetrics))
	}
	const warmup = 1
	for round := 0; round < warmup+c.netRounds; round++ {
		for i, m := range netMetrics {
			for _, k := range netOrder(round+i, len(vs)) {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				v := vs[k]
				nr, err := b.zoneNetExchange(v, m.exchange, counts[i])
				if err != nil {
					return fmt.Errorf("%s: %w", v.name, err)
				}
				if nr.DeniedErr != v.want {
					return fmt.Errorf("%s: the connect to %s, which no rule allows, ended in %s, want %s", v.name, v.denied, nr.DeniedErr, v.want)
				}
				if round >= warmup {
					rate[v.name][i] = append(rate[v.name][i], nr.Rate)
					cpu[v.name][i] = append(cpu[v.name][i], nr.CPU)
				}
			}
		}
	}
	for _, v := range vs {
		res.ZoneNet = append(res.ZoneNet, netRows(v.name, rate[v.name], cpu[v.name])...)
	}
	return nil
}

// gateway is the first address of addr's /24: the bridge of the bench's
// listener namespace and of a rauha zone with a /24 subnet.
func gateway(addr string) string {
	ip := net.ParseIP(addr).To4()
	if ip == nil {
		return addr
	}
	return net.IPv4(ip[0], ip[1], ip[2], 1).String()
}

// zoneNetStart runs container id of r detached: in the network namespace
// netns when given, with annotations ann; a listener on listen when given
// (ready when it says so), else a sleeping client.
func (b *bench) zoneNetStart(r *runtime, id, netns string, ann map[string]string, listen string) error {
	args := []string{"/bin/sleep", "3600"}
	if listen != "" {
		args = []string{"/rauhabench", "netserve", listen}
	}
	var edit []func(map[string]any)
	if netns != "" {
		edit = append(edit, func(cfg map[string]any) {
			linux := cfg["linux"].(map[string]any)
			nss, _ := linux["namespaces"].([]any)
			for _, ns := range nss {
				if m := ns.(map[string]any); m["type"] == "network" {
					m["path"] = netns
				}
			}
		})
	}
	bundle, err := b.bundle(r, id, args, ann, edit...)
	if err != nil {
		return err
	}
	outPath := filepath.Join(b.cfg.work, r.name+"-"+id+".out")
	out, err := os.Create(outPath)
	if err != nil {
		return err
	}
	defer out.Close()
	b.track(r, id, true)
	if _, err := r.invoke(out, "run", "-d", "--bundle", bundle, id); err != nil {
		return err
	}
	if listen == "" {
		return nil
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		data, _ := os.ReadFile(outPath)
		if strings.HasPrefix(string(data), "ready\n") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("listener %s not ready: %q", id, data)
		}
	}
}

// memberAddr is the IPv4 address rauha leased to member id of zone z
// (zone inspect).
func (b *bench) memberAddr(r *runtime, z, id string) (string, error) {
	outPath := filepath.Join(b.cfg.work, "inspect.out")
	out, err := os.Create(outPath)
	if err != nil {
		return "", err
	}
	defer out.Close()
	if _, err := r.invoke(out, "zone", "inspect", z); err != nil {
		return "", err
	}
	data, _ := os.ReadFile(outPath)
	var zi struct {
		Members []struct {
			ID        string   `json:"id"`
			Addresses []string `json:"addresses"`
		} `json:"members"`
	}
	if err := jsonUnmarshal(data, &zi); err != nil {
		return "", fmt.Errorf("zone inspect %s: %w", z, err)
	}
	for _, m := range zi.Members {
		for _, a := range m.Addresses {
			if ip := net.ParseIP(a); m.ID == id && ip != nil && ip.To4() != nil {
				return a, nil
			}
		}
	}
	return "", fmt.Errorf("zone inspect %s: no IPv4 address for %s: %s", z, id, data)
}

// zoneNetExchange execs the client into v's client container for one
// exchange.
func (b *bench) zoneNetExchange(v *zoneNetVariant, exchange string, count int) (netResult, error) {
	outPath := filepath.Join(b.cfg.work, "zonenet.out")
	out, err := os.Create(outPath)
	if err != nil {
		return netResult{}, err
	}
	defer out.Close()
	_, err = v.r.invoke(out, "exec", zoneNetClient, "/rauhabench", "netclient", v.addr, exchange, strconv.Itoa(count), v.denied)
	data, _ := os.ReadFile(outPath)
	if err != nil {
		return netResult{}, fmt.Errorf("%w (client output: %s)", err, strings.TrimSpace(string(data)))
	}
	var nr netResult
	if err := jsonUnmarshal(data, &nr); err != nil {
		return netResult{}, fmt.Errorf("client output %q: %w", data, err)
	}
	return nr, nil
}
