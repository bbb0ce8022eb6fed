package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// LoadFile reads a policy file: JSON (by a .json suffix or a leading '{')
// or YAML. Both are read into a yaml.Node tree first (JSON by its own
// tokenizer, so JSON keeps JSON's syntax) and then key by key, so that
// every error names the file, the line and the key: an unknown key, a value
// of the wrong type, a bad duration or size, an empty path. A list key
// (write, read, ...) also takes one value: `write: ./sbx`.
func LoadFile(path string) (*Settings, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	var doc *yaml.Node
	if strings.HasSuffix(path, ".json") || bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		doc, err = jsonNode(b)
	} else {
		doc, err = yamlNode(b)
	}
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	s := &Settings{}
	if doc == nil {
		return s, nil // an empty file: all defaults
	}
	if err := decodeSettings(doc, s); err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	return s, nil
}

// yamlNode parses b; nil for a document without content.
func yamlNode(b []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		return nil, fmt.Errorf("%s (not valid YAML)", oneLine(msg))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil
	}
	n := doc.Content[0]
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	return n, nil
}

// jsonNode parses b as JSON into the yaml.Node a YAML parser would make,
// lines included (counted from the decoder's offsets).
func jsonNode(b []byte) (*yaml.Node, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	line := func(off int64) int {
		if off > int64(len(b)) {
			off = int64(len(b))
		}
		return bytes.Count(b[:off], []byte("\n")) + 1
	}
	var value func() (*yaml.Node, error)
	value = func() (*yaml.Node, error) {
		// The offset before the token is where the previous one ended:
		// skip the white space and separators to the token's own line.
		off := dec.InputOffset()
		for off < int64(len(b)) && strings.IndexByte(" \t\r\n,:", b[off]) >= 0 {
			off++
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonErr(err, line(dec.InputOffset()))
		}
		n := &yaml.Node{Line: line(off)}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				n.Kind, n.Tag = yaml.MappingNode, "!!map"
				for dec.More() {
					k, err := value()
					if err != nil {
						return nil, err
					}
					v, err := value()
					if err != nil {
						return nil, err
					}
					n.Content = append(n.Content, k, v)
				}
			case '[':
				n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
				for dec.More() {
					v, err := value()
					if err != nil {
						return nil, err
					}
					n.Content = append(n.Content, v)
				}
			}
			if _, err := dec.Token(); err != nil { // the closing delimiter
				return nil, jsonErr(err, line(dec.InputOffset()))
			}
		case string:
			n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!str", t
		case json.Number:
			n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!int", t.String()
			if strings.ContainsAny(t.String(), ".eE") {
				n.Tag = "!!float"
			}
		case bool:
			n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!bool", strconv.FormatBool(t)
		case nil:
			n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!null", "null"
		}
		return n, nil
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	n, err := value()
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("line %d: more after the closing } (not valid JSON)", line(dec.InputOffset()))
	}
	return n, nil
}

func jsonErr(err error, line int) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("line %d: %s (not valid JSON)", line, se.Error())
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("line %d: unexpected end of file (not valid JSON)", line)
	}
	return fmt.Errorf("line %d: %v (not valid JSON)", line, err)
}

// field is one key of Settings.
type field struct {
	key   string
	index int
}

// settingsKeys are the keys of Settings by name, from the yaml tags.
func settingsKeys() map[string]field {
	t := reflect.TypeOf(Settings{})
	m := map[string]field{}
	for i := 0; i < t.NumField(); i++ {
		k := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if k != "" && k != "-" {
			m[k] = field{k, i}
		}
	}
	return m
}

// Keys are the policy file's keys, sorted (for messages and docs).
func Keys() []string {
	var ks []string
	for k := range settingsKeys() {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// pathKeys are the keys whose values are paths (or path patterns): an
// empty one is an error, never "the current directory".
var pathKeys = map[string]bool{
	"write": true, "cwd": true, "read": true, "deny_read": true, "allow_exec": true,
	"allow_device": true, "scratch": true, "report": true, "trace": true,
}

// decodeSettings sets s from the mapping n.
func decodeSettings(n *yaml.Node, s *Settings) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: want keys and values (e.g. \"write: [./sbx]\"), got %s", n.Line, describe(n))
	}
	keys := settingsKeys()
	seen := map[string]int{}
	v := reflect.ValueOf(s).Elem()
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k := kn.Value
		f, ok := keys[k]
		if !ok || kn.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: unknown key %q (known keys: %s)", kn.Line, k, strings.Join(Keys(), ", "))
		}
		if l, dup := seen[k]; dup {
			return fmt.Errorf("line %d: key %s: given twice (first on line %d)", kn.Line, k, l)
		}
		seen[k] = kn.Line
		if err := decodeValue(k, vn, v.Field(f.index)); err != nil {
			return fmt.Errorf("line %d: key %s: %w", vn.Line, k, err)
		}
	}
	return nil
}

// decodeValue sets dst (a field of Settings) from n, key naming it.
func decodeValue(key string, n *yaml.Node, dst reflect.Value) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	null := n.Kind == yaml.ScalarNode && n.Tag == "!!null"
	switch p := dst.Addr().Interface().(type) {
	case *Duration:
		if n.Kind != yaml.ScalarNode || null {
			return fmt.Errorf("want a duration such as 90s, 5m or a number of seconds, got %s", describe(n))
		}
		return p.UnmarshalText([]byte(n.Value))
	case *Size:
		if n.Kind != yaml.ScalarNode || null {
			return fmt.Errorf("want a size such as 512M, 2G or a number of bytes, got %s", describe(n))
		}
		return p.UnmarshalText([]byte(n.Value))
	case *[]string:
		if null {
			return nil // as if not given
		}
		items := []*yaml.Node{n}
		if n.Kind == yaml.SequenceNode {
			items = n.Content
		}
		list := []string{} // `scratch: []` is no scratch directory, not the default
		for _, it := range items {
			if it.Kind == yaml.AliasNode {
				it = it.Alias
			}
			if it.Kind != yaml.ScalarNode || it.Tag == "!!null" {
				return fmt.Errorf("want a list of values, got %s in it (line %d)", describe(it), it.Line)
			}
			if it.Value == "" {
				if it.Line != n.Line {
					return fmt.Errorf("item on line %d: %w", it.Line, errEmpty)
				}
				return errEmpty
			}
			if pathKeys[key] {
				if err := CheckTilde(it.Value); err != nil {
					if it.Line != n.Line {
						return fmt.Errorf("item on line %d: %w", it.Line, err)
					}
					return err
				}
			}
			list = append(list, it.Value)
		}
		*p = list
		return nil
	case *string:
		if n.Kind != yaml.ScalarNode || null {
			return fmt.Errorf("want one value, got %s", describe(n))
		}
		if n.Value == "" && pathKeys[key] {
			return errEmpty
		}
		if pathKeys[key] {
			if err := CheckTilde(n.Value); err != nil {
				return err
			}
		}
		*p = n.Value
		return nil
	case *int:
		i, err := strconv.Atoi(n.Value)
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || err != nil {
			return fmt.Errorf("want a whole number, got %s", describe(n))
		}
		*p = i
		return nil
	case *bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			return fmt.Errorf("want true or false, got %s", describe(n))
		}
		*p = n.Value == "true" || n.Value == "True" || n.Value == "TRUE"
		return nil
	case *map[string]string:
		if null {
			return nil
		}
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("want NAME: value pairs, got %s", describe(n))
		}
		m := map[string]string{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			if kn.Kind != yaml.ScalarNode || vn.Kind != yaml.ScalarNode || kn.Value == "" {
				return fmt.Errorf("want NAME: value pairs, got %s: %s (line %d)", describe(kn), describe(vn), kn.Line)
			}
			v := vn.Value
			if vn.Tag == "!!null" {
				v = ""
			}
			m[kn.Value] = v
		}
		*p = m
		return nil
	}
	return fmt.Errorf("cannot be set in a policy file")
}

// errEmpty is an empty path (or name) in a list or a path key: given to
// the kernel, "" would be the current directory, as when an unset
// variable was written into the file.
var errEmpty = errors.New("empty value (an unset variable?): give a path or remove the entry")

// describe names a node's value for messages: "a list", "a mapping",
// `"forever"`, "nothing".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "keys and values"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return strconv.Quote(n.Value)
	}
	return "something else"
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ") }
