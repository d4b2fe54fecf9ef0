package orbit

import "encoding/json"

// readMember is readObject for an object inside a frame json.Unmarshal has already accepted: its
// text is valid JSON, so its members are split from the bytes without parsing them again (the
// task of a task.assign carries the payload, which a second Unmarshal would validate again).
func readMember(raw []byte, path string, required []string, allowed ...string) (object, error) {
	o, ok := splitObject(raw)
	if !ok {
		return nil, errAt(path, "must be an object")
	}
	return o, checkKeys(o, path, required, allowed...)
}

// splitObject reads the members of a valid JSON object text: each key and its value's text.
func splitObject(raw []byte) (object, bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	o := object{}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return o, true
	}
	for i < len(raw) && raw[i] == '"' {
		end := stringEnd(raw, i)
		key, ok := plainString(raw[i:end])
		if !ok && json.Unmarshal(raw[i:end], &key) != nil {
			return nil, false
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = skipSpace(raw, i+1)
		vend := valueEnd(raw, i)
		o[key] = json.RawMessage(raw[i:vend])
		i = skipSpace(raw, vend)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
			continue
		}
		return o, i < len(raw) && raw[i] == '}'
	}
	return nil, false
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\r' || raw[i] == '\n') {
		i++
	}
	return i
}

// stringEnd is the index after the string literal that starts at raw[i].
func stringEnd(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(raw)
}

// valueEnd is the index after the JSON value that starts at raw[i].
func valueEnd(raw []byte, i int) int {
	if i >= len(raw) {
		return i
	}
	switch raw[i] {
	case '"':
		return stringEnd(raw, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				j = stringEnd(raw, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(raw)
	}
	j := i
	for j < len(raw) && raw[j] != ',' && raw[j] != '}' && raw[j] != ']' && raw[j] != ' ' && raw[j] != '\t' && raw[j] != '\r' && raw[j] != '\n' {
		j++
	}
	return j
}
