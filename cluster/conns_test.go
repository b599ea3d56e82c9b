package cluster

import "testing"

// The socket table is read once for many proxies: each port counts its
// ESTABLISHED lines whose local end it is, never a listening socket, a
// TIME_WAIT, or a connection whose remote end it is.
func TestEstablishedOnCountsEachPort(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:9C40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:9C40 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:9C40 0100007F:D432 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:9C41 0100007F:D433 06 00000000:00000000 00:00000000 00000000     0        0 0 3 0000000000000000
   4: 0100007F:D434 0100007F:9C41 01 00000000:00000000 00:00000000 00000000     0        0 4 1 0000000000000000 20 4 30 10 -1
   5: 0100007F:9C42 0100007F:D435 01 00000000:00000000 00:00000000 00000000     0        0 5 1 0000000000000000 20 4 30 10 -1
`
	ports := map[uint16][]string{0x9C40: {"a"}, 0x9C41: {"b"}, 0x9C43: {"c"}}
	counts := map[uint16]int{}
	establishedOn(table, ports, counts)
	for p, want := range map[uint16]int{0x9C40: 2, 0x9C41: 0, 0x9C43: 0} {
		if counts[p] != want {
			t.Errorf("port %X: %d established, want %d", p, counts[p], want)
		}
	}
	if counts[0x9C42] != 0 {
		t.Errorf("port 9C42 was not asked for but counted %d", counts[0x9C42])
	}
}
