package orbit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
)

// A strict reader of one JSON object, with the rules of the protocol's TypeBox schemas
// (protocol/frames.ts): unknown fields refused, no null where a type is expected, integers by
// value (1.0 is the integer 1, as in JSON.parse), string lengths in UTF-16 units, and lone
// surrogates (which encoding/json silently turns into U+FFFD) detected from the raw text.
// encoding/json's struct decoding cannot be used: it matches field names case-insensitively and
// takes null for any type.

type object map[string]json.RawMessage

// schemaError is a frame that does not match its schema: `path message`.
type schemaError struct {
	path string
	msg  string
}

func (e *schemaError) Error() string { return e.path + " " + e.msg }

func errAt(path, format string, args ...any) error {
	if path == "" {
		path = "/"
	}
	return &schemaError{path: path, msg: fmt.Sprintf(format, args...)}
}

func firstByte(raw []byte) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

// readObject reads raw as a JSON object whose keys are all in `allowed` and that has every key of
// `required`.
func readObject(raw []byte, path string, required []string, allowed ...string) (object, error) {
	if firstByte(raw) != '{' {
		return nil, errAt(path, "must be an object")
	}
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, errAt(path, "must be an object")
	}
	return o, checkKeys(o, path, required, allowed...)
}

// checkKeys: every key of o is in required or allowed, and every required key is present.
func checkKeys(o object, path string, required []string, allowed ...string) error {
	for k := range o {
		if !contains(required, k) && !contains(allowed, k) {
			return errAt(path+"/"+k, "is not an allowed property")
		}
	}
	for _, k := range required {
		if _, ok := o[k]; !ok {
			return errAt(path+"/"+k, "is required")
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// jsonString reads a JSON string; lone reports a lone surrogate escape (\ud800 without its pair),
// which JSON.parse keeps and a UTF-8 column cannot store.
func jsonString(raw []byte, path string) (s string, lone bool, err error) {
	if firstByte(raw) != '"' {
		return "", false, errAt(path, "must be a string")
	}
	if plain, ok := plainString(raw); ok {
		return plain, false, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, errAt(path, "must be a string")
	}
	return s, hasLoneSurrogate(raw), nil
}

// plainString is the fast path of the strings frames are made of (ids, names, timestamps): a
// literal without escapes, control characters or invalid UTF-8 is its own bytes.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return "", false
		}
	}
	return string(body), true
}

// hasLoneSurrogate scans a JSON string literal's escapes for a surrogate without its partner.
func hasLoneSurrogate(raw []byte) bool {
	if bytes.IndexByte(raw, '\\') < 0 {
		return false
	}
	pendingHigh := false
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 >= len(raw) {
			if pendingHigh {
				return true
			}
			continue
		}
		if raw[i+1] != 'u' || i+5 >= len(raw) {
			if pendingHigh {
				return true
			}
			i++ // an escaped character (\\ included) is never the start of another escape
			continue
		}
		v, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
		i += 5
		if err != nil {
			continue
		}
		switch {
		case v >= 0xd800 && v <= 0xdbff:
			if pendingHigh {
				return true
			}
			pendingHigh = true
		case v >= 0xdc00 && v <= 0xdfff:
			if !pendingHigh {
				return true
			}
			pendingHigh = false
		default:
			if pendingHigh {
				return true
			}
		}
	}
	return pendingHigh
}

// utf16Len is a string's length as JavaScript counts it (the schemas' minLength/maxLength).
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// jsonInt reads a JSON number that is an integer by value, within [min, max].
func jsonInt(raw []byte, path string, min, max float64) (int64, error) {
	c := firstByte(raw)
	if c != '-' && (c < '0' || c > '9') {
		return 0, errAt(path, "must be an integer")
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, errAt(path, "must be an integer")
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) || f != math.Trunc(f) {
		return 0, errAt(path, "must be an integer")
	}
	if f < min || f > max {
		return 0, errAt(path, "must be an integer in %v..%v", min, max)
	}
	if f >= math.MaxInt64 { // JSON.parse keeps 1e300 an integer; no field here means such a value
		return math.MaxInt64, nil
	}
	return int64(f), nil
}

func jsonBool(raw []byte, path string) (bool, error) {
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errAt(path, "must be a boolean")
}

func jsonArray(raw []byte, path string, minItems, maxItems int) ([]json.RawMessage, error) {
	if firstByte(raw) != '[' {
		return nil, errAt(path, "must be an array")
	}
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, errAt(path, "must be an array")
	}
	if len(a) < minItems || len(a) > maxItems {
		return nil, errAt(path, "must have %d-%d items", minItems, maxItems)
	}
	return a, nil
}

var uint64RE = regexp.MustCompile(`^(0|[1-9][0-9]{0,19})$`)

// isID reports whether s is an Orbit id: 32 lowercase hex characters.
func isID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// isName reports whether s is 1-max of [A-Za-z0-9._:-] (handler, version and worker names).
func isName(s string, max int) bool {
	if len(s) < 1 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// Field readers of one kind each: a value of the wrong shape is a schemaError at its path.

func idField(o object, k, path string) (string, error) { // an Orbit id: 32 lowercase hex
	s, _, err := jsonString(o[k], path+"/"+k)
	if err == nil && !isID(s) {
		err = errAt(path+"/"+k, "must be an id (32 lowercase hex characters)")
	}
	return s, err
}

func shortField(o object, k, path string) (string, error) { // any string of 1-64 UTF-16 units
	s, _, err := jsonString(o[k], path+"/"+k)
	if err == nil && (s == "" || utf16Len(s) > IDFieldMax) {
		err = errAt(path+"/"+k, "must be 1-%d characters", IDFieldMax)
	}
	return s, err
}

func nameField(o object, k, path string, max int) (string, error) {
	s, _, err := jsonString(o[k], path+"/"+k)
	if err == nil && !isName(s, max) {
		err = errAt(path+"/"+k, "must be 1-%d of [A-Za-z0-9._:-]", max)
	}
	return s, err
}

func anyString(o object, k, path string) (string, error) {
	s, _, err := jsonString(o[k], path+"/"+k)
	return s, err
}

// textField is free text the gateway stores in a text column: no lone surrogate.
func textField(o object, k, path string, minLen, maxLen int) (string, error) {
	s, lone, err := jsonString(o[k], path+"/"+k)
	if err != nil {
		return "", err
	}
	if lone {
		return "", errAt(path+"/"+k, "must be valid UTF-8 text (a lone surrogate cannot be stored)")
	}
	if n := utf16Len(s); n < minLen || n > maxLen {
		return "", errAt(path+"/"+k, "must be %d-%d characters", minLen, maxLen)
	}
	return s, nil
}

func stringList(raw json.RawMessage, path string, minItems, maxItems int, each func(s string, p string) error) ([]string, error) {
	items, err := jsonArray(raw, path, minItems, maxItems)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(items))
	for i, it := range items {
		p := path + "/" + strconv.Itoa(i)
		s, _, err := jsonString(it, p)
		if err == nil && each != nil {
			err = each(s, p)
		}
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// jsonDepth is the nesting depth of a JSON text (an object or array is level 1), read from its
// bytes without building it.
func jsonDepth(raw []byte) int {
	depth, max, inString := 0, 0, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > max {
				max = depth
			}
		case '}', ']':
			depth--
		}
	}
	return max
}

// marshalPlain is json.Marshal without HTML escaping: `<`, `>` and `&` stay one byte each, as
// JSON.stringify writes them, so an output's size is the size the limits are measured on.
func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
