package e2e

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// process is a command under test, run as its own process like in a cluster.
type process struct {
	t    *testing.T
	name string
	args []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan struct{}
}

func startProcess(t *testing.T, name string, args ...string) *process {
	p := &process{t: t, name: name, args: args}
	p.start()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.output())
		}
	})
	return p
}

func (p *process) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.out == nil {
		p.out = &bytes.Buffer{} // kept across restarts: the whole run is checked and shown
	}
	p.cmd = exec.Command(filepath.Join(binDir, p.name), p.args...)
	p.cmd.Stdout, p.cmd.Stderr = syncWriter{p}, syncWriter{p}
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("starting %s: %v", p.name, err)
	}
	p.done = make(chan struct{})
	cmd, done := p.cmd, p.done
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
}

// stop ends the process with SIGTERM, as the kubelet would, and waits.
func (p *process) stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// kill ends the process with SIGKILL, as a crash or an OOM kill would:
// nothing of it runs its shutdown (Leases stay held, writes stay in flight).
func (p *process) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	_ = cmd.Process.Kill()
	<-done
}

func (p *process) restart() {
	p.stop()
	p.start()
}

func (p *process) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

type syncWriter struct{ p *process }

func (w syncWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.out.Write(b)
}

// pid is the running process's id.
func (p *process) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}
