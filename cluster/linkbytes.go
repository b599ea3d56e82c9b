package cluster

import (
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ConnBytes is what the kernel counted on one TCP connection accepted by
// a proxy: the bytes it received from the client and the bytes it sent
// to the client that the client acknowledged (tcp_info's bytes_received
// and bytes_acked), since the connection opened.
type ConnBytes struct {
	FromClient, ToClient uint64
}

// maxDiagSockets bounds the sockets one dump reads (a namespace with more
// is refused, not read in part).
const maxDiagSockets = 1 << 16

// LinkBytes reads, for each named proxy, the byte counts of every TCP
// connection open on its listen port, by socket inode: one sock_diag dump
// of the harness's network namespace (where its toxiproxy server runs).
// Two readings taken around a fault window tell the bytes that crossed a
// link (or were sent into it) while the fault lasted.
func (n *Net) LinkBytes(names []string) (map[string]map[uint32]ConnBytes, error) {
	ports, err := n.listenPorts(names)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[uint32]ConnBytes, len(names))
	for _, name := range names {
		out[name] = map[uint32]ConnBytes{}
	}
	seen := 0
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		err := tcpDiag(fam, func(sport uint16, inode uint32, b ConnBytes) error {
			if seen++; seen > maxDiagSockets {
				return fmt.Errorf("more than %d sockets in the namespace", maxDiagSockets)
			}
			for _, name := range ports[sport] {
				out[name][inode] = b
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("sock_diag: %w", err)
		}
	}
	return out, nil
}

// diagEstablished adds to counts, for each port of ports, the established
// TCP connections whose local port it is (IPv4 and IPv6).
func diagEstablished(ports map[uint16][]string, counts map[uint16]int) error {
	seen := 0
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		err := tcpDiag(fam, func(sport uint16, _ uint32, _ ConnBytes) error {
			if seen++; seen > maxDiagSockets {
				return fmt.Errorf("more than %d sockets in the namespace", maxDiagSockets)
			}
			if _, ok := ports[sport]; ok {
				counts[sport]++
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// tcpDiag dumps the established TCP sockets of one address family with
// their tcp_info (NETLINK_SOCK_DIAG, inet_diag_req_v2) and calls each with
// its local port, inode and byte counts.
func tcpDiag(family uint8, each func(sport uint16, inode uint32, b ConnBytes) error) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	// nlmsghdr (16 bytes) + inet_diag_req_v2 (56 bytes).
	req := make([]byte, 16+56)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], 1)
	req[16] = family
	req[17] = unix.IPPROTO_TCP
	req[18] = 1 << (inetDiagInfo - 1) // idiag_ext: tcp_info
	ne.PutUint32(req[20:], 1<<tcpEstablished)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 1<<16)
	for {
		k, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:k])
		if err != nil {
			return err
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return nil
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if code := int32(ne.Uint32(m.Data)); code != 0 {
						return unix.Errno(-code)
					}
				}
				return nil
			}
			// inet_diag_msg: family, state, timer, retrans (4), sockid
			// (48: sport and dport big-endian first), expires, rqueue,
			// wqueue, uid, inode (20): 72 bytes, then attributes.
			d := m.Data
			if len(d) < 72 {
				continue
			}
			sport := binary.BigEndian.Uint16(d[4:])
			inode := ne.Uint32(d[68:])
			var b ConnBytes
			for a := d[72:]; len(a) >= 4; {
				l, typ := int(ne.Uint16(a)), ne.Uint16(a[2:])
				if l < 4 || l > len(a) {
					break
				}
				if typ == inetDiagInfo {
					var ti unix.TCPInfo
					raw := a[4:l]
					end := int(unsafe.Offsetof(ti.Bytes_received) + 8)
					if len(raw) >= end {
						b.ToClient = ne.Uint64(raw[unsafe.Offsetof(ti.Bytes_acked):])
						b.FromClient = ne.Uint64(raw[unsafe.Offsetof(ti.Bytes_received):])
					}
				}
				a = a[(l+3)&^3:]
			}
			if err := each(sport, inode, b); err != nil {
				return err
			}
		}
	}
}

const (
	inetDiagInfo   = 2 // INET_DIAG_INFO
	tcpEstablished = 1 // TCP_ESTABLISHED
)

// listenPorts maps the listen port of each named proxy (on the harness's own
// toxiproxy server) to the proxies' names.
func (n *Net) listenPorts(names []string) (map[uint16][]string, error) {
	ports := map[uint16][]string{}
	for _, name := range names {
		px, ok := n.Get(name)
		if !ok {
			return nil, fmt.Errorf("no proxy %s", name)
		}
		if n.peer != nil && isPeerProxy(name) {
			return nil, fmt.Errorf("proxy %s is on the backend's own toxiproxy server", name)
		}
		_, port, err := net.SplitHostPort(px.Listen)
		if err != nil {
			return nil, fmt.Errorf("proxy %s listens at %q: %w", name, px.Listen, err)
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("proxy %s listens at %q: %w", name, px.Listen, err)
		}
		ports[uint16(p)] = append(ports[uint16(p)], name)
	}
	return ports, nil
}
