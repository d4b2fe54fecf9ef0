package orbit

import (
	"bytes"
	"strings"
	"testing"
)

// `<`, `>` and `&` count one byte each, as the gateway measures them: a large output of them is
// neither OUTPUT_TOO_LARGE nor a frame over max_frame_bytes.
func TestOutputOfHTMLCharactersKeepsItsSize(t *testing.T) {
	out := strings.Repeat("<&>", 80*1024) // 240 KiB, under the 256 KiB output limit
	r := successResult(strings.Repeat("a", 32), out)
	if r.Error != nil {
		t.Fatalf("output refused: %+v", r.Error)
	}
	if bytes.Contains(r.Output, []byte(`\u003c`)) || len(r.Output) != len(out)+2 {
		t.Fatalf("output escaped: %d bytes", len(r.Output))
	}
	frame, err := resultFrame(r, 1024*1024)
	if err != nil {
		t.Fatalf("result frame refused: %v", err)
	}
	if len(frame) > len(out)+200 {
		t.Fatalf("result frame is %d bytes for a %d-byte output", len(frame), len(out))
	}
}
