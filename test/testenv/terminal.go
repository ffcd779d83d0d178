package testenv

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Terminal is a program running in a detached tmux session, driven as a
// user would drive it: keys in, the screen out.
type Terminal struct {
	t      testing.TB
	socket string // a tmux server of its own: nothing of the user's tmux is touched
}

// StartTerminal runs argv in a new tmux session of cols×rows with the given
// environment added, and kills the session when the test ends.
func StartTerminal(t testing.TB, cols, rows int, env []string, argv ...string) *Terminal {
	t.Helper()
	socket := fmt.Sprintf("panorama-%d", time.Now().UnixNano())
	args := []string{"-L", socket, "new-session", "-d", "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows)}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	// remain-on-exit keeps the screen of a program that quits, so a test
	// shows why it quit; without escape-time, Escape and the next key
	// would reach the program as one Alt chord.
	args = append(args, "-e", "TERM=xterm-256color", strings.Join(quoteAll(argv), " "),
		";", "set-option", "remain-on-exit", "on", ";", "set-option", "-s", "escape-time", "0")
	if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	term := &Terminal{t: t, socket: socket}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })
	return term
}

func quoteAll(argv []string) []string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return q
}

// Send types keys, in tmux's key names ("Enter", "Escape", "C-c") or as
// literal text.
func (term *Terminal) Send(keys ...string) {
	term.t.Helper()
	if out, err := exec.Command("tmux", append([]string{"-L", term.socket, "send-keys"}, keys...)...).CombinedOutput(); err != nil {
		term.t.Fatalf("tmux send-keys %q: %v: %s", keys, err, out)
	}
}

// Screen is what the terminal shows now.
func (term *Terminal) Screen() string {
	term.t.Helper()
	out, err := exec.Command("tmux", "-L", term.socket, "capture-pane", "-p").CombinedOutput()
	if err != nil {
		term.t.Fatalf("tmux capture-pane: %v: %s", err, out)
	}
	return string(out)
}

// WaitFor waits until the screen shows every one of texts and returns
// that screen; it fails the test with the last screen after timeout.
func (term *Terminal) WaitFor(timeout time.Duration, texts ...string) string {
	term.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		screen := term.Screen()
		missing := ""
		for _, text := range texts {
			if !strings.Contains(screen, text) {
				missing = text
				break
			}
		}
		if missing == "" {
			return screen
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("after %s the terminal does not show %q:\n%s", timeout, missing, screen)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
