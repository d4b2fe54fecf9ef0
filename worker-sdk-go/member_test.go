package orbit

import (
	"bytes"
	"encoding/json"
	"testing"
)

// splitObject must give, for every valid JSON object, the members json.Unmarshal gives.
func FuzzSplitObject(f *testing.F) {
	for _, s := range []string{
		`{}`, ` { "a" : 1 , "b":[1,{"c":"}"}], "d\"e":"x\\"} `, `{"task":{"payload":{"k":[true,null,-1.5e3]}},"z":"\u00e9"}`,
		`{"a":{},"a":[]}`, `{"s":"a,b}c]"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want map[string]json.RawMessage
		if firstByte(raw) != '{' || json.Unmarshal(raw, &want) != nil {
			return
		}
		got, ok := splitObject(raw)
		if !ok || len(got) != len(want) {
			t.Fatalf("splitObject(%q) = %v, %v; json.Unmarshal: %v", raw, got, ok, want)
		}
		for k, w := range want {
			if !bytes.Equal(bytes.TrimSpace(got[k]), bytes.TrimSpace(w)) {
				t.Fatalf("splitObject(%q)[%q] = %q, json.Unmarshal: %q", raw, k, got[k], w)
			}
		}
	})
}
