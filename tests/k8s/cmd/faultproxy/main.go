// faultproxy: an HTTP(S) proxy for the end-to-end tests that puts the faults of a loaded
// control plane between a client and its upstream(s): latency, a 504 answered after the
// request reached the upstream, a response dropped after the upstream applied the request, a
// connection reset before it is sent. Rates are set (and changed) through a control port, so a
// test can turn the faults on for a burst and off to let things settle. With several upstreams
// it spreads requests round-robin (two extender replicas behind one Service). Test tooling.
//
//	faultproxy --listen 127.0.0.1:0 --port-file F --upstream https://127.0.0.1:6443 \
//	    [--cert C --key K] [--ca CA] [--control 127.0.0.1:0 --control-port-file G]
//
// Control: POST /faults {"latency_ms":[200,2000],"p504":0.05,"pdrop":0.02,"preset":0.01,
// "methods":["PUT","POST","PATCH"],"path_contains":"","watch":false}; GET /stats.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type faults struct {
	LatencyMS    [2]int   `json:"latency_ms"`
	P504         float64  `json:"p504"`
	PDrop        float64  `json:"pdrop"`
	PReset       float64  `json:"preset"`
	Methods      []string `json:"methods"`
	PathContains string   `json:"path_contains"`
	Watch        bool     `json:"watch"`
}

type stats struct {
	Requests, Delayed, Answered504, Dropped, Reset, Watches int64
}

type proxy struct {
	mu        sync.Mutex
	f         faults
	upstreams []*url.URL
	next      atomic.Uint64
	client    *http.Client
	rng       *rand.Rand
	st        stats
}

func (p *proxy) faults() faults {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.f
}

func (p *proxy) roll(prob float64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return prob > 0 && p.rng.Float64() < prob
}

func (p *proxy) delay(f faults) time.Duration {
	lo, hi := f.LatencyMS[0], f.LatencyMS[1]
	if hi <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if hi < lo {
		hi = lo
	}
	return time.Duration(lo+p.rng.Intn(hi-lo+1)) * time.Millisecond
}

func isWatch(r *http.Request) bool {
	w := r.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

func (f faults) applies(r *http.Request) bool {
	if isWatch(r) && !f.Watch {
		return false
	}
	if f.PathContains != "" && !strings.Contains(r.URL.Path, f.PathContains) {
		return false
	}
	if len(f.Methods) == 0 {
		return true
	}
	for _, m := range f.Methods {
		if strings.EqualFold(m, r.Method) {
			return true
		}
	}
	return false
}

// hangUp closes the client's connection without an answer.
func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // a reset, as a dying peer sends
			}
			_ = c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // HTTP/2: abort the stream
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	atomic.AddInt64(&p.st.Requests, 1)
	f := p.faults()
	faulty := f.applies(r)
	if faulty && p.roll(f.PReset) {
		atomic.AddInt64(&p.st.Reset, 1)
		hangUp(w)
		return
	}
	if faulty {
		if d := p.delay(f); d > 0 {
			atomic.AddInt64(&p.st.Delayed, 1)
			time.Sleep(d)
		}
	}
	up := p.upstreams[p.next.Add(1)%uint64(len(p.upstreams))]
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = up.Scheme, up.Host
	out.Host = up.Host
	resp, err := p.client.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if isWatch(r) {
		atomic.AddInt64(&p.st.Watches, 1)
		stream(w, resp)
		return
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		hangUp(w)
		return
	}
	// The upstream has applied the request: what the client hears of it may still be lost.
	if faulty && p.roll(f.P504) {
		atomic.AddInt64(&p.st.Answered504, 1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGatewayTimeout)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure",` +
			`"message":"Timeout: request did not complete within the allotted timeout",` +
			`"reason":"Timeout","code":504}`))
		return
	}
	if faulty && p.roll(f.PDrop) {
		atomic.AddInt64(&p.st.Dropped, 1)
		hangUp(w)
		return
	}
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		if strings.EqualFold(k, "Content-Length") || strings.EqualFold(k, "Connection") {
			continue
		}
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
}

// stream copies a watch as it comes, flushing every piece.
func stream(w http.ResponseWriter, resp *http.Response) {
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	fl, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) control(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/faults":
		var f faults
		if err := json.NewDecoder(r.Body).Decode(&f); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		p.f = f
		p.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodGet && r.URL.Path == "/stats":
		st := stats{
			Requests: atomic.LoadInt64(&p.st.Requests), Delayed: atomic.LoadInt64(&p.st.Delayed),
			Answered504: atomic.LoadInt64(&p.st.Answered504), Dropped: atomic.LoadInt64(&p.st.Dropped),
			Reset: atomic.LoadInt64(&p.st.Reset), Watches: atomic.LoadInt64(&p.st.Watches),
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st)
	default:
		http.NotFound(w, r)
	}
}

func listen(addr, portFile string) net.Listener {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatalf("faultproxy: listen %s: %v", addr, err)
	}
	if portFile != "" {
		port := ln.Addr().(*net.TCPAddr).Port
		if err := os.WriteFile(portFile, []byte(fmt.Sprint(port)), 0o644); err != nil {
			log.Fatalf("faultproxy: %v", err)
		}
	}
	return ln
}

func main() {
	addr := flag.String("listen", "127.0.0.1:0", "address to serve on")
	portFile := flag.String("port-file", "", "write the chosen port here")
	upstream := flag.String("upstream", "", "upstream URL(s), comma-separated: round-robin")
	cert := flag.String("cert", "", "serving certificate (PEM): serve HTTPS")
	key := flag.String("key", "", "serving key (PEM)")
	ca := flag.String("ca", "", "CA that signs the upstream's certificate")
	ctl := flag.String("control", "127.0.0.1:0", "control address")
	ctlPortFile := flag.String("control-port-file", "", "write the control port here")
	seed := flag.Int64("seed", 1, "random seed")
	flag.Parse()

	p := &proxy{rng: rand.New(rand.NewSource(*seed))}
	for _, u := range strings.Split(*upstream, ",") {
		pu, err := url.Parse(strings.TrimSpace(u))
		if err != nil || pu.Host == "" {
			log.Fatalf("faultproxy: bad --upstream %q", u)
		}
		p.upstreams = append(p.upstreams, pu)
	}
	tr := &http.Transport{ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 256,
		TLSClientConfig: &tls.Config{}}
	if *ca != "" {
		pem, err := os.ReadFile(*ca)
		if err != nil {
			log.Fatalf("faultproxy: %v", err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		tr.TLSClientConfig.RootCAs = pool
	}
	p.client = &http.Client{Transport: tr}

	go func() {
		srv := &http.Server{Handler: http.HandlerFunc(p.control)}
		log.Fatal(srv.Serve(listen(*ctl, *ctlPortFile)))
	}()
	srv := &http.Server{Handler: p, ErrorLog: log.New(io.Discard, "", 0)}
	ln := listen(*addr, *portFile)
	if *cert != "" {
		log.Fatal(srv.ServeTLS(ln, *cert, *key))
	}
	log.Fatal(srv.Serve(ln))
}
