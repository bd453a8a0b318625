// netprobe sends the packets whose real destination the address given to
// connect()/sendto() does not tell, and watches what arrives.
//
//	netprobe sniff                 every IP packet received in this netns, one
//	                               line each: "SRC DST PROTO[ srr| rthdr]";
//	                               "ready" first
//	netprobe raw ADDR              ICMP echo request from a raw socket
//	netprobe ping ADDR             ICMP echo request from a ping socket
//	                               (SOCK_DGRAM, IPPROTO_ICMP)
//	netprobe lsrr ADDR:PORT HOP    UDP datagram to ADDR:PORT with an IPv4 loose
//	                               source route through HOP
//	netprobe rthdr [ADDR]:PORT HOP UDP datagram to ADDR:PORT with an IPv6
//	                               segment routing header through HOP
//	netprobe packet IFACE SRC DST  UDP/IPv4 datagram SRC -> DST:9 sent as a
//	                               link-layer broadcast from a packet socket
//	netprobe mark ADDR             UDP datagram to ADDR:9
//
// The senders print "sent", or the failing call and its error on stderr
// ("sendto: operation not permitted") and exit 1.
package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	args := os.Args[2:]
	var err error
	switch {
	case os.Args[1] == "sniff" && len(args) == 0:
		err = sniff()
	case (os.Args[1] == "raw" || os.Args[1] == "ping") && len(args) == 1:
		err = echo(os.Args[1] == "raw", netip.MustParseAddr(args[0]))
	case os.Args[1] == "lsrr" && len(args) == 2:
		err = sourceRouted(netip.MustParseAddrPort(args[0]), netip.MustParseAddr(args[1]))
	case os.Args[1] == "rthdr" && len(args) == 2:
		err = sourceRouted(netip.MustParseAddrPort(args[0]), netip.MustParseAddr(args[1]))
	case os.Args[1] == "packet" && len(args) == 3:
		err = packet(args[0], netip.MustParseAddr(args[1]), netip.MustParseAddr(args[2]))
	case os.Args[1] == "mark" && len(args) == 1:
		err = sendUDP(netip.AddrPortFrom(netip.MustParseAddr(args[0]), 9))
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: netprobe sniff | raw|ping ADDR | lsrr|rthdr ADDR:PORT HOP | packet IFACE SRC DST | mark ADDR")
	os.Exit(2)
}

// call names the failing system call the way the tests match it.
func call(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %s", name, err)
}

func sockaddr(ap netip.AddrPort) unix.Sockaddr {
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
}

func family(a netip.Addr) int {
	if a.Is4() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

func echo(raw bool, dst netip.Addr) error {
	proto, typ := unix.IPPROTO_ICMP, byte(8)
	if dst.Is6() {
		proto, typ = unix.IPPROTO_ICMPV6, 128
	}
	st := unix.SOCK_DGRAM
	if raw {
		st = unix.SOCK_RAW
	}
	fd, err := unix.Socket(family(dst), st|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return call("socket", err)
	}
	defer unix.Close(fd)
	msg := []byte{typ, 0, 0, 0, 0x52, 0x41, 0, 1, 'r', 'a', 'u', 'h', 'a', 0}
	if dst.Is4() {
		binary.BigEndian.PutUint16(msg[2:], checksum(msg)) // the kernel does ICMPv6's
	}
	if err := unix.Sendto(fd, msg, 0, sockaddr(netip.AddrPortFrom(dst, 0))); err != nil {
		return call("sendto", err)
	}
	fmt.Println("sent")
	return nil
}

func sourceRouted(dst netip.AddrPort, hop netip.Addr) error {
	fd, err := unix.Socket(family(dst.Addr()), unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return call("socket", err)
	}
	defer unix.Close(fd)
	if dst.Addr().Is4() {
		h := hop.As4()
		opts := []byte{1, 131, 7, 4, h[0], h[1], h[2], h[3]} // NOP, LSRR [hop]
		err = unix.SetsockoptString(fd, unix.IPPROTO_IP, unix.IP_OPTIONS, string(opts))
	} else {
		// Segment routing header (type 4) with two segments: the kernel
		// puts the destination in segments[0] and sends to segments[1].
		srh := make([]byte, 8+2*16)
		srh[1], srh[2], srh[3], srh[4] = 4, 4, 1, 1 // hdrlen, type, segments left, last entry
		h := hop.As16()
		copy(srh[24:], h[:])
		err = unix.SetsockoptString(fd, unix.IPPROTO_IPV6, unix.IPV6_RTHDR, string(srh))
	}
	if err != nil {
		return call("setsockopt", err)
	}
	if err := unix.Sendto(fd, []byte("rauha"), 0, sockaddr(dst)); err != nil {
		return call("sendto", err)
	}
	fmt.Println("sent")
	return nil
}

func sendUDP(dst netip.AddrPort) error {
	fd, err := unix.Socket(family(dst.Addr()), unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return call("socket", err)
	}
	defer unix.Close(fd)
	if err := unix.Sendto(fd, []byte("mark"), 0, sockaddr(dst)); err != nil {
		return call("sendto", err)
	}
	fmt.Println("sent")
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func packet(ifname string, src, dst netip.Addr) error {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_IP)))
	if err != nil {
		return call("socket", err)
	}
	defer unix.Close(fd)
	pkt := make([]byte, 20+8+5)
	pkt[0], pkt[8], pkt[9] = 0x45, 64, unix.IPPROTO_UDP
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
	s, d := src.As4(), dst.As4()
	copy(pkt[12:], s[:])
	copy(pkt[16:], d[:])
	binary.BigEndian.PutUint16(pkt[10:], checksum(pkt[:20]))
	binary.BigEndian.PutUint16(pkt[20:], 40000)
	binary.BigEndian.PutUint16(pkt[22:], 9)
	binary.BigEndian.PutUint16(pkt[24:], 8+5)
	copy(pkt[28:], "rauha")
	to := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP), Ifindex: ifi.Index, Halen: 6,
		Addr: [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	if err := unix.Sendto(fd, pkt, 0, to); err != nil {
		return call("sendto", err)
	}
	fmt.Println("sent")
	return nil
}

func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

func sniff() error {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return call("socket", err)
	}
	fmt.Println("ready")
	buf := make([]byte, 65536)
	for {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return call("recvfrom", err)
		}
		ll, ok := from.(*unix.SockaddrLinklayer)
		if !ok || ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		if line := describe(buf[:n]); line != "" {
			fmt.Println(line)
		}
	}
}

var protoNames = map[byte]string{1: "icmp", 6: "tcp", 17: "udp", 58: "icmpv6"}

func proto(p byte) string {
	if s, ok := protoNames[p]; ok {
		return s
	}
	return fmt.Sprintf("proto-%d", p)
}

// describe is one line for an IPv4 or IPv6 packet, "" for anything else.
func describe(p []byte) string {
	switch {
	case len(p) >= 20 && p[0]>>4 == 4:
		src, _ := netip.AddrFromSlice(p[12:16])
		dst, _ := netip.AddrFromSlice(p[16:20])
		s := fmt.Sprintf("%s %s %s", src, dst, proto(p[9]))
		hl := min(int(p[0]&0xf)*4, len(p))
		for i := 20; i < hl && p[i] != 0; {
			if p[i] == 1 {
				i++
				continue
			}
			if p[i] == 131 || p[i] == 137 {
				s += " srr"
			}
			if i+1 >= hl || p[i+1] < 2 {
				break
			}
			i += int(p[i+1])
		}
		return s
	case len(p) >= 40 && p[0]>>4 == 6:
		src, _ := netip.AddrFromSlice(p[8:24])
		dst, _ := netip.AddrFromSlice(p[24:40])
		next, off, extra := p[6], 40, []string{}
		for (next == 0 || next == 43 || next == 60) && off+2 <= len(p) {
			if next == 43 {
				extra = append(extra, "rthdr")
			}
			next, off = p[off], off+(int(p[off+1])+1)*8
		}
		return strings.TrimSpace(fmt.Sprintf("%s %s %s %s", src, dst, proto(next), strings.Join(extra, " ")))
	}
	return ""
}
