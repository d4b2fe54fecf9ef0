package orbit

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The shared vectors of capacity and prefetch (protocol/vectors/worker-prefetch.json, also read
// by the Node SDK's test/sdk-prefetch.test.ts): NewWorker accepts or refuses each with the same
// message, and the capacity its sessions declare.

type prefetchVector struct {
	Name     string `json:"name"`
	Capacity int    `json:"capacity"`
	Prefetch int    `json:"prefetch"`
	Expect   struct {
		OK       bool    `json:"ok"`
		Declared int     `json:"declared"`
		Code     string  `json:"code"`
		Message  *string `json:"message"`
	} `json:"expect"`
}

func prefetchOptions(capacity, prefetch int) Options {
	return Options{URL: "http://127.0.0.1:1", Token: "t", Queues: []string{"dddddddddddddddddddddddddddddddd"}, Capacity: capacity, Prefetch: prefetch,
		Handlers: []Handler{{Name: "h", Func: func(ctx context.Context, e *Event) (any, error) { return nil, nil }}}}
}

func TestPrefetchVectors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "protocol", "vectors", "worker-prefetch.json"))
	if err != nil {
		t.Fatalf("read the shared vectors: %v", err)
	}
	var doc struct{ Vectors []prefetchVector }
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Vectors) < 10 {
		t.Fatalf("parse worker-prefetch.json: %d vectors, %v", len(doc.Vectors), err)
	}
	for _, v := range doc.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			w, err := NewWorker(prefetchOptions(v.Capacity, v.Prefetch))
			if v.Expect.OK {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got := w.declaredCapacityLocked(); got != v.Expect.Declared || declaredCapacity(v.Capacity, v.Prefetch) != v.Expect.Declared {
					t.Fatalf("declares %d, want %d", got, v.Expect.Declared)
				}
				return
			}
			var fe *FrameError
			if !errors.As(err, &fe) || fe.Code != v.Expect.Code {
				t.Fatalf("got %v, want %s", err, v.Expect.Code)
			}
			if v.Expect.Message != nil && fe.Message != *v.Expect.Message {
				t.Fatalf("message %q, want %q", fe.Message, *v.Expect.Message)
			}
		})
	}
}

// SetCapacity refuses a capacity whose sum with Prefetch is over the maximum, with the same
// message, and keeps the capacity it had.
func TestSetCapacityChecksPrefetch(t *testing.T) {
	w, err := NewWorker(prefetchOptions(24, 1000))
	if err != nil {
		t.Fatal(err)
	}
	var fe *FrameError
	if err := w.SetCapacity(25); !errors.As(err, &fe) || fe.Code != "INVALID_ARGUMENT" || fe.Message != prefetchProblem {
		t.Fatalf("SetCapacity(25): %v", err)
	}
	if got := w.declaredCapacityLocked(); got != 1024 {
		t.Fatalf("declares %d after a refused SetCapacity, want 1024", got)
	}
	if err := w.SetCapacity(0); err != nil || w.declaredCapacityLocked() != 0 {
		t.Fatalf("SetCapacity(0): %v, declares %d", err, w.declaredCapacityLocked())
	}
}
