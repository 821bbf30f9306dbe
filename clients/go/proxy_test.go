package leasehold_test

import (
	"net"
	"sync"
	"testing"
	"time"
)

// proxy is a fault proxy: it forwards TCP between one client and a real
// server, and can stall (stop forwarding, connections kept open), refuse
// (every connection closed, new ones refused), delay, lose answers, and cut
// the client off for good, while the server stays up for everyone else.
// It notes when it forwarded each chunk from the client, so that a test
// can bound when the server last heard from it.
type proxy struct {
	t      testing.TB
	addr   string
	target string

	mu       sync.Mutex
	l        net.Listener
	conns    map[net.Conn]bool
	closed   bool
	refusing bool
	// stalled is open while forwarding is stopped, closed to go on.
	stalled chan struct{}
	latency time.Duration
	// lose is how many of the next connections lose their answer: the
	// request reaches the server, the connection is cut as the answer
	// starts back.
	lose int
	ups  []time.Time
}

func startProxy(t testing.TB, target string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, addr: l.Addr().String(), target: target, l: l, conns: map[net.Conn]bool{}}
	go p.serve(l)
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) url() string { return "http://" + p.addr }

func (p *proxy) serve(l net.Listener) {
	for {
		in, err := l.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		if p.closed || p.refusing {
			p.mu.Unlock()
			in.Close()
			out.Close()
			continue
		}
		p.conns[in], p.conns[out] = true, true
		lose := p.lose > 0
		if lose {
			p.lose--
		}
		p.mu.Unlock()
		go p.pump(out, in, true)
		if lose {
			go func() {
				var b [1]byte
				_, _ = out.Read(b[:])
				in.Close()
				out.Close()
			}()
			continue
		}
		go p.pump(in, out, false)
	}
}

// pump copies src to dst, chunk by chunk, through the proxy's faults.
func (p *proxy) pump(dst, src net.Conn, up bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate() {
				return
			}
			// Noted before it is written: the server cannot read it sooner.
			if up {
				p.mu.Lock()
				p.ups = append(p.ups, time.Now())
				p.mu.Unlock()
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// gate waits while the proxy is stalled, then the latency; false when the
// proxy was cut or refuses meanwhile.
func (p *proxy) gate() bool {
	p.mu.Lock()
	stalled, latency := p.stalled, p.latency
	p.mu.Unlock()
	if stalled != nil {
		<-stalled
	}
	if latency > 0 {
		time.Sleep(latency)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed && !p.refusing
}

// stall stops forwarding in both directions; connections stay open and new
// ones are accepted, and nothing reaches either side until unstall.
func (p *proxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled == nil {
		p.stalled = make(chan struct{})
	}
}

func (p *proxy) unstall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled != nil {
		close(p.stalled)
		p.stalled = nil
	}
}

// delay holds every chunk d before forwarding it, in either direction.
func (p *proxy) delay(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

// refuse closes every connection and the listening socket: new connections
// are refused (ECONNREFUSED) until restore.
func (p *proxy) refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refusing = true
	p.dropLocked()
}

// restore listens again on the same address and forwards as before.
func (p *proxy) restore() {
	l, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refusing, p.l = false, l
	go p.serve(l)
}

// cut cuts the client off for good.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.dropLocked()
}

func (p *proxy) dropLocked() {
	p.l.Close()
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
	if p.stalled != nil {
		close(p.stalled)
		p.stalled = nil
	}
}

// loseAnswers makes the next n connections lose their answers.
func (p *proxy) loseAnswers(n int) {
	p.mu.Lock()
	p.lose = n
	p.mu.Unlock()
}

// lastUp is when the proxy last forwarded bytes from the client to the
// server, at or before t: the server heard nothing of the client later.
func (p *proxy) lastUp(t time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.ups) - 1; i >= 0; i-- {
		if !p.ups[i].After(t) {
			return p.ups[i]
		}
	}
	return time.Time{}
}
