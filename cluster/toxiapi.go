package cluster

import (
	"net"
	"net/http"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/gorilla/mux"
	"github.com/rs/zerolog"
)

// serveToxiproxy serves the embedded toxiproxy's HTTP API on a loopback
// listener the harness already holds, and returns its address. toxiproxy's
// own ApiServer.Listen binds the port itself, after the caller picked it,
// and ends the whole process (zerolog's Fatal, with any logger) when that
// fails: another process that took the port in between would end the
// harness with no clean-up. The routes are Listen's, with its refusal of
// browsers (a page must not drive the API on loopback) and its timeout.
func serveToxiproxy() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	s := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	r := mux.NewRouter()
	for _, rt := range []struct {
		path, method string
		h            http.HandlerFunc
	}{
		{"/reset", "POST", s.ResetState},
		{"/proxies", "GET", s.ProxyIndex},
		{"/proxies", "POST", s.ProxyCreate},
		{"/populate", "POST", s.Populate},
		{"/proxies/{proxy}", "GET", s.ProxyShow},
		{"/proxies/{proxy}", "POST", s.ProxyUpdate},
		{"/proxies/{proxy}", "DELETE", s.ProxyDelete},
		{"/proxies/{proxy}/toxics", "GET", s.ToxicIndex},
		{"/proxies/{proxy}/toxics", "POST", s.ToxicCreate},
		{"/proxies/{proxy}/toxics/{toxic}", "GET", s.ToxicShow},
		{"/proxies/{proxy}/toxics/{toxic}", "POST", s.ToxicUpdate},
		{"/proxies/{proxy}/toxics/{toxic}", "DELETE", s.ToxicDelete},
		{"/version", "GET", s.Version},
	} {
		r.HandleFunc(rt.path, rt.h).Methods(rt.method)
	}
	h := http.TimeoutHandler(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.UserAgent(), "Mozilla/") {
			http.Error(w, "User agent not allowed", http.StatusForbidden)
			return
		}
		r.ServeHTTP(w, req)
	}), 25*time.Second, "")
	srv := &http.Server{Handler: h, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	go srv.Serve(ln) // for the life of the process, as the proxies it serves
	return ln.Addr().String(), nil
}
