package testenv

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections to a target, and can cut them all and
// refuse new ones: a member cluster's outage as its clients see it.
type Proxy struct {
	Addr   string
	target string

	mu       sync.Mutex
	listener net.Listener
	conns    map[net.Conn]struct{}
}

// NewProxy starts a proxy on a free loopback port; it stops with the test.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: l.Addr().String(), target: target, conns: map[net.Conn]struct{}{}}
	p.serve(l)
	t.Cleanup(p.Down)
	return p
}

// Down closes every connection and stops listening.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listener != nil {
		_ = p.listener.Close()
		p.listener = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = map[net.Conn]struct{}{}
}

// Up listens again on the same address.
func (p *Proxy) Up(t testing.TB) {
	t.Helper()
	l, err := net.Listen("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	p.serve(l)
}

func (p *Proxy) serve(l net.Listener) {
	p.mu.Lock()
	p.listener = l
	p.mu.Unlock()
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = in.Close()
				continue
			}
			if !p.track(l, in, out) {
				continue
			}
			go p.pipe(in, out)
			go p.pipe(out, in)
		}
	}()
}

func (p *Proxy) track(l net.Listener, conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listener != l { // went down meanwhile
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}
