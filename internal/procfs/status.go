package procfs

import (
	"bytes"
	"strconv"
)

// StatusField returns the rest of the first line of b, a "Key:\tvalue"
// file (/proc/<pid>/status, /proc/<pid>/fdinfo/<fd>), that starts with key
// (key includes its ':'); "" when there is none.
func StatusField(b []byte, key string) string {
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if rest, ok := bytes.CutPrefix(line, []byte(key)); ok {
			return string(rest)
		}
	}
	return ""
}

// StatusInt is the integer of the first line of b that starts with key and
// holds one, def when no such line does.
func StatusInt(b []byte, key string, def int) int {
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if bytes.HasPrefix(line, []byte(key)) {
			if v, err := strconv.Atoi(string(bytes.TrimSpace(line[len(key):]))); err == nil {
				return v
			}
		}
	}
	return def
}
