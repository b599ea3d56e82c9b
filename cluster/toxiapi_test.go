package cluster

import (
	"net"
	"net/http"
	"testing"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
)

// The harness's toxiproxy-server answers its client on its own listener
// and refuses a browser; asked again, the same server answers.
func TestToxiproxyServerAPI(t *testing.T) {
	s, err := toxiproxyServer()
	if err != nil {
		t.Fatal(err)
	}
	addr := s.addr
	if again, err := toxiproxyServer(); err != nil || again != s {
		t.Fatalf("second call: %v, %v; want the running server %q", again, err, addr)
	}
	get := func(ua string) int {
		req, _ := http.NewRequest("GET", "http://"+addr+"/version", nil)
		req.Header.Set("User-Agent", ua)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("lockfault"); c != http.StatusOK {
		t.Fatalf("GET /version: %d, want 200", c)
	}
	if c := get("Mozilla/5.0 (X11; Linux x86_64)"); c != http.StatusForbidden {
		t.Fatalf("GET /version from a browser: %d, want 403", c)
	}
	cl := toxiclient.NewClient(addr)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	px, err := cl.CreateProxy("toxiapi-test", "127.0.0.1:0", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Delete()
	if _, err := px.AddToxic("slow", "latency", "downstream", 1, toxiclient.Attributes{"latency": 5}); err != nil {
		t.Fatal(err)
	}
	ts, err := px.Toxics()
	if err != nil || len(ts) != 1 || ts[0].Name != "slow" {
		t.Fatalf("toxics of the proxy: %v, %v; want one named slow", ts, err)
	}
	if err := px.RemoveToxic("slow"); err != nil {
		t.Fatal(err)
	}
}
