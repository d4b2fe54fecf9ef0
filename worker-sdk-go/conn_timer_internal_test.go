package orbit

// Internal: the timer that forces the close after a fatal error frame is stopped when the session
// ends sooner (it used to stay armed for 5 s after every such session, a leak per session).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"
)

func TestFatalCloseTimerStoppedWhenSessionEnds(t *testing.T) {
	url, token, queue := os.Getenv("ORBIT_TEST_URL"), os.Getenv("ORBIT_TEST_TOKEN"), os.Getenv("ORBIT_TEST_QUEUE_ID")
	if url == "" || token == "" || queue == "" {
		t.Fatal("ORBIT_TEST_URL, ORBIT_TEST_TOKEN and ORBIT_TEST_QUEUE_ID must be set (test/go-sdk.test.ts)")
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	opts := DialOptions{URL: url, Token: token, Registration: Registration{WorkerID: "timer-" + hex.EncodeToString(b), Queues: []string{queue}}}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	first, err := Dial(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	// A second session of the same worker id supersedes the first: a fatal STATE_CONFLICT error
	// frame, then the gateway's close 4409, well within the 5 s the timer waits.
	second, err := Dial(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = second.Close(1000, "done") }()
	select {
	case <-first.Done():
	case <-time.After(fatalCloseWait):
		t.Fatal("the superseded session was not closed by the gateway")
	}
	if code, _ := first.CloseCode(); code != 4409 {
		t.Fatalf("close code %d, want 4409", code)
	}
	first.mu.Lock()
	timer := first.closeTimer
	first.mu.Unlock()
	if timer == nil {
		t.Fatal("no fatal error frame was handled before the close")
	}
	if timer.Stop() {
		t.Fatal("the fatal-close timer was still armed after the session ended")
	}
}
